"""The README's examples are real: its C++ block is examples/cpp/quickstart.cpp (built and run by
ctest as readme_quickstart), and its Python block runs."""

import pathlib
import re
import runpy

ROOT = pathlib.Path(__file__).resolve().parents[2]


def code_blocks(language):
    text = (ROOT / "README.md").read_text()
    return re.findall(rf"^```{language}\n(.*?)^```$", text, flags=re.S | re.M)


def test_the_readme_opens_with_the_two_commands():
    first = code_blocks("bash")[0]
    commands = [line.split("#")[0].strip() for line in first.splitlines()]
    assert commands == ["bash scripts/main.sh", "bash scripts/test.sh"]


def test_the_readme_cpp_example_is_the_quickstart_file():
    blocks = code_blocks("cpp")
    assert len(blocks) == 1
    assert blocks[0] == (ROOT / "examples/cpp/quickstart.cpp").read_text()


def test_the_readme_python_example_runs(tmp_path, monkeypatch):
    blocks = code_blocks("python")
    assert blocks, "the README has no Python example"
    script = tmp_path / "readme_example.py"
    script.write_text(blocks[0])
    monkeypatch.chdir(ROOT)
    result = runpy.run_path(str(script))
    assert "h" in result
