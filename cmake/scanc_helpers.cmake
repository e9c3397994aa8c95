# scanc_library(NAME SOURCES ... DEPS ...): one library per layer, scanc:: alias, warnings,
# public headers under include/. DEPS are PUBLIC: a layer's users see what it builds on.
function(scanc_library name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS;PRIVATE_DEPS" ${ARGN})
  add_library(${name} STATIC ${ARG_SOURCES})
  add_library(scanc::${name} ALIAS ${name})
  target_include_directories(${name} PUBLIC ${PROJECT_SOURCE_DIR}/include)
  target_compile_features(${name} PUBLIC cxx_std_20)
  target_link_libraries(${name} PUBLIC ${ARG_DEPS} PRIVATE ${ARG_PRIVATE_DEPS} scanc_warnings)
endfunction()

add_library(scanc_warnings INTERFACE)
target_compile_options(scanc_warnings INTERFACE -Wall -Wextra -Wno-unused-parameter)
if(SCANC_SANITIZE)
  add_compile_options(-fsanitize=${SCANC_SANITIZE} -fno-omit-frame-pointer -fno-sanitize-recover=all)
  add_link_options(-fsanitize=${SCANC_SANITIZE})
endif()

# scanc_test(NAME SOURCES ... DEPS ... [LABELS ...] [ENVIRONMENT VAR=VALUE ...]): a GoogleTest
# binary registered with ctest.
function(scanc_test name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS;LABELS;ENVIRONMENT" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE ${ARG_DEPS} GTest::gtest GTest::gtest_main scanc_warnings)
  target_precompile_headers(${name} PRIVATE <gtest/gtest.h>)  # parsed once per suite, not per file
  target_compile_definitions(${name} PRIVATE
    SCANC_SOURCE_DIR="${PROJECT_SOURCE_DIR}" SCANC_BINARY_DIR="${PROJECT_BINARY_DIR}")
  gtest_discover_tests(${name} PROPERTIES LABELS "${ARG_LABELS}" ENVIRONMENT "${ARG_ENVIRONMENT}"
                       DISCOVERY_TIMEOUT 60)
endfunction()
