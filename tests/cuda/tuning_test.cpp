// The tuning table and its SCANC_CUDA_TUNING overrides (host only: no GPU needed).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>

#include "scanc/error.h"
#include "tuning.h"

namespace scanc::cuda {
namespace {

struct Env {
    explicit Env(const char* value) { setenv("SCANC_CUDA_TUNING", value, 1); }
    ~Env() { unsetenv("SCANC_CUDA_TUNING"); }
};

TEST(CudaTuning, OverridesChangeOnlyTheNamedFields) {
    Tuning table = choose_tuning(2, 90);
    Env env("rows=64x8,sitems=4,scitems=6,smb=3,window=96,pcopies=4,cols=4x12,clanes=16,flanes=8,cwin=3,mb=5,cmb=6,res=512x4,rmb=7,rgroups=0,tickets=1,"
            "nondet=1,stamps=1,cmajor=0,fixsteps=0,vec=0,skip=0,prefetch=396");
    Tuning t = choose_tuning(2, 90);
    EXPECT_EQ(t.row_threads, 64);
    EXPECT_EQ(t.row_items, 8);
    EXPECT_EQ(t.row_window, 96);
    EXPECT_EQ(t.scalar_row_items(), 6);
    EXPECT_EQ(t.shared_row_items(), 4);
    EXPECT_EQ(t.shared_rows_min_blocks(), 3);
    EXPECT_EQ(t.row_pcopies, 4);
    EXPECT_EQ(t.col_warps, 4);
    EXPECT_EQ(t.col_rows, 12);
    EXPECT_EQ(t.col_lanes, 16);
    EXPECT_EQ(t.few_lines_lanes, 8);
    EXPECT_EQ(t.col_steps(16), 4 * 2 * 12);  // a warp holds two runs of 16 columns
    EXPECT_EQ(t.col_window, 3);
    EXPECT_EQ(t.min_blocks, 5);
    EXPECT_EQ(t.cols_min_blocks(), 6);
    EXPECT_EQ(t.res_threads, 512);
    EXPECT_EQ(t.res_items, 4);
    EXPECT_EQ(t.res_min_blocks, 7);
    EXPECT_FALSE(t.res_groups);
    EXPECT_EQ(t.row_band, 1);
    EXPECT_TRUE(t.tickets);
    EXPECT_TRUE(t.nondeterministic);
    EXPECT_TRUE(t.stamps);
    EXPECT_FALSE(t.fixed_steps);
    EXPECT_FALSE(t.vector_rows);
    EXPECT_FALSE(t.row_skip);
    EXPECT_EQ(t.row_prefetch, 396);
    EXPECT_TRUE(table.fixed_steps && table.vector_rows && table.row_skip && table.row_prefetch > 0);
    EXPECT_EQ(t.map_threads, table.map_threads);
}

TEST(CudaTuning, RowBandsCountRowsAndTheLastOfChunkMajorAndRowMajorWins) {
    {
        Env env("rband=4");
        EXPECT_EQ(choose_tuning(1, 90).row_band, 4);
    }
    {
        Env env("rband=4,cmajor=1");
        EXPECT_EQ(choose_tuning(1, 90).row_band, 0);  // one band of every row
    }
    {
        Env env("cmajor=1,rband=1");
        EXPECT_EQ(choose_tuning(1, 90).row_band, 1);  // row-major
    }
}

TEST(CudaTuning, FourAndEightByteStatesTakeTheVectorRowsOnSm90Only) {
    EXPECT_TRUE(choose_tuning(1, 90).vector_rows);
    EXPECT_TRUE(choose_tuning(2, 90).vector_rows);
    EXPECT_FALSE(choose_tuning(4, 90).vector_rows);
    EXPECT_FALSE(choose_tuning(1, 80).vector_rows);
}

TEST(CudaTuning, RowsOfOneTileKeepTheLookBackTilesItemsUnlessTheTableSplitsThem) {
    const Tuning words4 = choose_tuning(4, 90), words1 = choose_tuning(1, 90), words2 = choose_tuning(2, 90);
    EXPECT_EQ(words4.shared_row_items(), words4.row_items);
    EXPECT_EQ(words4.shared_rows_min_blocks(), words4.min_blocks);
    // On sm_90, 4- and 8-byte states take longer look-back tiles at fewer blocks per SM.
    for (const Tuning& t : {words1, words2}) {
        EXPECT_LT(t.shared_row_items(), t.row_items);
        EXPECT_GT(t.shared_rows_min_blocks(), t.min_blocks);
    }
}

TEST(CudaTuning, TheScalarLookBackTilesAreShorterThanTheVectorOnesOnSm90SoThatTheyCompileSooner) {
    for (int words : {1, 2}) {
        const Tuning t = choose_tuning(words, 90);
        EXPECT_LT(t.scalar_row_items(), t.row_items) << words;
        EXPECT_GE(t.scalar_row_items(), t.shared_row_items()) << words;
    }
    EXPECT_EQ(choose_tuning(4, 90).scalar_row_items(), choose_tuning(4, 90).row_items);
}

TEST(CudaTuning, HeavyCombinesLookBackTilesHold64StateWordsAThreadAndLightOnesKeepTheTables) {
    for (int words : {1, 2}) {
        const Tuning light = choose_tuning(words, 90, kHeavyCombine - 1), heavy = choose_tuning(words, 90, kHeavyCombine);
        EXPECT_GT(light.row_items, 64 / words) << words;
        EXPECT_EQ(heavy.row_items, 64 / words) << words;
        EXPECT_EQ(heavy.scalar_row_items(), std::min(light.scalar_row_items(), 64 / words)) << words;
        EXPECT_EQ(heavy.shared_row_items(), light.shared_row_items()) << words;
        EXPECT_EQ(heavy.col_rows, light.col_rows) << words;
    }
    EXPECT_EQ(choose_tuning(4, 90, kHeavyCombine).row_items, choose_tuning(4, 90).row_items);  // already short
}

TEST(CudaTuning, HeavyCombinesRunFourLookBackBlocksAnSmOnSm90AndFourColsBlocksOverTheirWords) {
    const Tuning light = choose_tuning(1, 90), heavy = choose_tuning(1, 90, kHeavyCombine);
    EXPECT_LT(light.min_blocks, 4);
    EXPECT_LT(light.cols_min_blocks(), 4);
    EXPECT_EQ(heavy.min_blocks, 4);
    EXPECT_EQ(heavy.cols_min_blocks(), 4);
    EXPECT_EQ(heavy.shared_rows_min_blocks(), light.shared_rows_min_blocks());
    EXPECT_EQ(heavy.res_min_blocks, light.res_min_blocks);
    const Tuning light2 = choose_tuning(2, 90), heavy2 = choose_tuning(2, 90, kHeavyCombine);
    EXPECT_EQ(heavy2.min_blocks, 4);
    EXPECT_EQ(heavy2.cols_min_blocks(), std::max(light2.cols_min_blocks(), 2));
    // The one-tile kernel keeps its own blocks, as many as the look-back kernel's or more, so
    // rows of one tile stay there (row_tiles).
    EXPECT_GE(heavy2.shared_min_blocks, heavy2.min_blocks);
    for (int words : {4, 8})  // the generic rows, not measured there
        EXPECT_EQ(choose_tuning(words, 90, kHeavyCombine).min_blocks, choose_tuning(words, 90).min_blocks) << words;
    EXPECT_EQ(choose_tuning(1, 80, kHeavyCombine).min_blocks, choose_tuning(1, 80).min_blocks);
    EXPECT_EQ(choose_tuning(1, 80, kHeavyCombine).cols_min_blocks(), choose_tuning(1, 80).cols_min_blocks());
}

TEST(CudaTuning, RowsAndMinBlocksOverridesSizeEveryRowsKernelUnlessSplitAgain) {
    {
        Env env("rows=64x4,mb=6");
        Tuning t = choose_tuning(1, 90);
        EXPECT_EQ(t.shared_row_items(), 4);
        EXPECT_EQ(t.scalar_row_items(), 4);
        EXPECT_EQ(t.shared_rows_min_blocks(), 6);
    }
    Env env("smb=5,sitems=2,scitems=3,rows=64x4,mb=6");
    Tuning t = choose_tuning(1, 90);
    EXPECT_EQ(t.shared_row_items(), 2);
    EXPECT_EQ(t.scalar_row_items(), 3);
    EXPECT_EQ(t.shared_rows_min_blocks(), 5);
}

TEST(CudaTuning, AnOverrideKeepsTheTablesOtherFields) {
    Tuning table = choose_tuning(1, 90);
    Env env("mb=3");
    Tuning t = choose_tuning(1, 90);
    EXPECT_EQ(t.min_blocks, 3);
    EXPECT_EQ(t.row_threads, table.row_threads);
    EXPECT_EQ(t.row_window, table.row_window);
    EXPECT_EQ(t.col_rows, table.col_rows);
    EXPECT_EQ(t.res_items, table.res_items);
}

TEST(CudaTuning, MalformedOverridesAreRejectedWithTheExpectedForm) {
    for (const char* bad : {"rows=128", "rows=0x32", "window=48", "speed=9", "mb", "tickets=2", "rgroups=2", "cmajor=x", "rband=-1", "rband=x", "nondet=yes", "stamps=on", "pcopies=33", "prefetch=-1", "prefetch=x", "clanes=12", "clanes=4", "clanes=0", "flanes=4", "fixsteps=2", "vec=on", "rows=64x8,sitems=16", "rows=64x8,scitems=2,sitems=4", "scitems=0", "smb=0", "256,16,256"}) {
        SCOPED_TRACE(bad);
        Env env(bad);
        try {
            choose_tuning(1, 90);
            ADD_FAILURE() << "accepted";
        } catch (const RuntimeError& e) {
            EXPECT_NE(std::string(e.what()).find("key=value"), std::string::npos) << e.what();
        }
    }
}

TEST(CudaTuning, TransposeBytesCountEveryWarpsPaddedSegment) {
    // 4 warps x 2 words x (32 x 8 items + 8 padding words) x 4 bytes
    EXPECT_EQ(transpose_smem_bytes(128, 8, 2), 4 * 2 * (256 + 8) * 4);
    // the vector rows kernels pad by four words per 32
    EXPECT_EQ(transpose_smem_bytes(128, 8, 2, true), 4 * 2 * (256 + 32) * 4);
}

}  // namespace
}  // namespace scanc::cuda
