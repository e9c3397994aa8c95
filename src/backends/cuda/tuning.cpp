#include "tuning.h"

#include <cstdlib>
#include <sstream>

#include "scanc/error.h"

namespace scanc::cuda {

namespace {

struct Row {
    int max_words;  // applies to states of at most this many words
    int min_cc;     // and to this compute capability or newer
    Tuning tuning;
};

// First match wins. Threads x items shrink as the state grows, to keep registers and the
// shared-memory transpose (threads x items x words x 4 bytes, rows_smem_bytes) within budget.
const Row kTable[] = {
    // H200 sweep (docs/benchmarks.md): 256x32 at 2 blocks/SM halves the tiles but a 4096 row
    // fills half a tile (sum rows 60 -> 34%), so 4-byte states keep 256x16 at 4 blocks/SM.
    // 8-byte states: 128x32 rows at 4 blocks/SM hold 16K states in flight per SM against 12K
    // (affine rows 62.5 -> 70.3%, 1-D 32.5 -> 36.2%); their cols kernel keeps 3 blocks/SM.
    {1, 90, {256, 16, 256, 8, 16, 8, 256, 4}},
    {2, 90, {128, 32, 256, 8, 16, 8, 256, 4, 3}},
    {1, 0, {256, 12, 128, 8, 12, 8, 256, 2}},
    {2, 0, {256, 12, 128, 8, 12, 8, 256, 2}},
    {4, 0, {256, 8, 128, 8, 8, 8, 256, 1}},
    {8, 0, {128, 4, 128, 4, 8, 8, 256, 1}},
    {1 << 30, 0, {64, 2, 64, 4, 4, 8, 256, 1}},
};

}  // namespace

std::string Tuning::str() const {
    return cat("rows ", row_threads, "x", row_items, " w", row_window, ", cols ", col_warps, "x",
               col_rows, " w", col_window, ", map ", map_threads, ", min blocks ", min_blocks, "/",
               cols_min_blocks());
}

Tuning choose_tuning(int state_words, int cc) {
    if (const char* env = std::getenv("SCANC_CUDA_TUNING"); env && *env) {
        Tuning t;
        int* fields[] = {&t.row_threads, &t.row_items, &t.row_window, &t.col_warps, &t.col_rows,
                         &t.col_window, &t.min_blocks};
        std::istringstream in(env);
        for (int* f : fields) {
            char comma;
            if (!(in >> *f) || (in.peek() == ',' && !(in >> comma)))
                throw RuntimeError(cat("SCANC_CUDA_TUNING=`", env, "` does not parse; expected ",
                                       "rt,ri,rw,cw,cr,cwin,mb, e.g. 256,16,256,8,16,8,3"));
        }
        if (in.peek() == ',') in.get();
        if (in.peek() != std::char_traits<char>::eof() && !(in >> t.col_min_blocks))
            throw RuntimeError(cat("SCANC_CUDA_TUNING=`", env, "`: the optional 8th field (cols min blocks) ",
                                   "does not parse"));
        if (t.row_threads % 32 || t.row_window % 32 || t.row_window < 32)
            throw RuntimeError("SCANC_CUDA_TUNING: threads and window must be multiples of 32");
        return t;
    }
    for (const Row& r : kTable)
        if (state_words <= r.max_words && cc >= r.min_cc) return r.tuning;
    return kTable[std::size(kTable) - 1].tuning;
}

int rows_smem_bytes(const Tuning& t, int state_words) {
    int seg = 32 * t.row_items;
    return t.row_threads / 32 * state_words * (seg + seg / 32) * 4;
}

}  // namespace scanc::cuda
