#include "tuning.h"

#include <algorithm>
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

Tuning entry(int rt, int ri, int rw, int cw, int cr, int cwin, int mb, int cmb, int res_t, int res_i, int res_mb) {
    Tuning t;
    t.row_threads = rt, t.row_items = ri, t.row_window = rw;
    t.col_warps = cw, t.col_rows = cr, t.col_window = cwin;
    t.min_blocks = mb, t.col_min_blocks = cmb;
    t.res_threads = res_t, t.res_items = res_i, t.res_min_blocks = res_mb;
    return t;
}

Tuning with_pcopies(Tuning t, int copies) {
    t.row_pcopies = copies;
    return t;
}

Tuning with_shared_rows(Tuning t, int items, int min_blocks) {
    t.shared_items = items, t.shared_min_blocks = min_blocks;
    return t;
}

Tuning with_scalar_rows(Tuning t, int items) {
    t.scalar_items = items;
    return t;
}

Tuning with_vector_rows(Tuning t) {
    t.vector_rows = true;
    return t;
}

Tuning with_window_skip(Tuning t) {
    t.row_skip = true;
    return t;
}

Tuning with_prefetch(Tuning t, int tiles_ahead) {
    t.row_prefetch = tiles_ahead;
    return t;
}

Tuning with_few_lines_lanes(Tuning t, int lanes) {
    t.few_lines_lanes = lanes;
    return t;
}

// First match wins. Threads x items shrink as the state grows, to keep registers and the
// shared-memory transpose (threads x items x words x 4 bytes) within budget.
const Row kTable[] = {
    // sm_90, from H200 sweeps (each figure's run and what lost: the CUDA session logs in
    // docs/history/, the session named):
    // - Look-back tiles as long as registers allow without spills: 4-byte states 128x96 at 3
    //   blocks/SM, window 32 (tenth session: 1-D 74.9 -> 80.7%, 16x2^22 85.1 -> 88.3%); 8-byte
    //   states 128x48 at 3 (affine 1-D 71.8 -> 75.2%; their window: below). Fewer tiles, fewer
    //   chain hops.
    // - Rows of one tile keep 128x32, at 8 (4-byte) or 4 (8-byte) blocks/SM: longer tiles cost
    //   rows of 4096 1-2 points (ninth session).
    // - 4-byte states publish 8 copies of each window end's prefix (third session: 1-D 64.9 ->
    //   67.5%; 8-byte states lost 2 points with copies then, and take 4 since the prefetch).
    // - Vector rows for both (eighth and ninth sessions: affine rows 95.6 -> 97.6%, sum rows
    //   90.1 -> 92.1%).
    // - Resident rows: 128x32 at 3 blocks/SM for 4-byte states, so rows of up to 1024 take a
    //   warp each (fifth session: rows of 1000 34 -> 91%); 256x16 at 2 for 8-byte states.
    // - Cols tiles of 8 warps x 32 steps at 2 blocks/SM, window 4.
    // - The scalar look-back kernel (unaligned or strided rows) takes 128x64 tiles for 4-byte
    //   states and 128x32 for 8-byte ones: at the vector kernel's length it alone set the first
    //   compile's time (NVRTC on one core: sum 0.54 -> 0.38 s, affine 0.60 -> 0.40 s). Eleventh
    //   session, scalar kernels only: sum 1-D 75.8 -> 72.0% (128x48: 58.3%), affine 1-D 66.5 ->
    //   66.8%, affine 256x2^20 82.2 -> 92.6%.
    // - Window ends publish F, so a window's prefix may come from the window before it
    //   (thirteenth session, two sweeps: sum 1-D 80.6 -> 81.1%, affine 1-D 75.3 -> 76.4%, sum
    //   2^20 8.4 -> 8.0 us; the same bits).
    // - Look-back tiles prefetch the inputs of the tile 66 ahead into L2 (fourteenth session,
    //   sweeps of 44-264 tiles ahead: sum 1-D 81.2 -> 91.2%, affine 1-D 76.6 -> 84.3%, 16x2^22
    //   86.5 -> 89.8%; 264 ahead thrashes L2: sum 1-D 77%).
    // - With the prefetch, 8-byte states take window 32 and 4 prefix copies (fifteenth session,
    //   two sweeps: affine 1-D 84.3-85.0 -> 86.6-87.5%; 4-byte states lost 4 points at window 64).
    // - Cols launches of few lines take lines of 16 columns (twentieth session: sum 65536x512
    //   along dim 0 57 -> 75%, 16384x2048 78 -> 82%; lines of 8 lost everywhere, 65 against
    //   87% on sum dim 0: 32-byte runs). Since the forty-second session only launches of at most
    //   16 lines of 32 columns a line count as few (few_lines in executable.cpp).
    {1, 90,
     with_few_lines_lanes(with_prefetch(with_window_skip(with_scalar_rows(
         with_vector_rows(with_shared_rows(with_pcopies(entry(128, 96, 32, 8, 32, 4, 3, 2, 128, 32, 3), 8), 32, 8)),
         64)), 66), 16)},
    {2, 90,
     with_few_lines_lanes(with_prefetch(with_window_skip(with_scalar_rows(
         with_vector_rows(with_shared_rows(with_pcopies(entry(128, 48, 32, 8, 32, 4, 3, 2, 256, 16, 2), 4), 32, 4)), 32)), 66), 16)},
    {1, 0, entry(256, 12, 128, 8, 12, 8, 2, 0, 256, 12, 2)},
    {2, 0, entry(256, 12, 128, 8, 12, 8, 2, 0, 256, 8, 2)},
    {4, 0, entry(256, 8, 128, 8, 8, 8, 1, 0, 256, 4, 1)},
    {8, 0, entry(128, 4, 128, 4, 8, 8, 1, 0, 128, 4, 1)},
    {1 << 30, 0, entry(64, 2, 64, 4, 4, 8, 1, 0, 64, 2, 1)},
};

[[noreturn]] void bad_tuning(const std::string& env, const std::string& why) {
    throw RuntimeError(cat("SCANC_CUDA_TUNING=`", env, "`: ", why, "; expected comma-separated key=value ",
                           "with keys rows=TxI, sitems=I, scitems=I, smb=N, window=W, pcopies=C (1-32), cols=WxR, clanes=8|16|32, flanes=0|8|16|32, cwin=W, mb=N, cmb=N, res=TxI, rmb=N, ",
                           "rgroups=0|1, cmajor=0|1, rband=N, tickets=0|1, nondet=0|1, stamps=0|1, fixsteps=0|1, vec=0|1, skip=0|1, prefetch=N, e.g. rows=128x32,mb=4"));
}

// Applies "key=value,..." to `t`.
void apply_overrides(Tuning& t, const std::string& env) {
    // rows=TxI and mb=N size every rows kernel unless sitems / scitems / smb split them again.
    bool rows = false, min_blocks = false, shared_items = false, shared_min_blocks = false, scalar_items = false;
    std::istringstream fields(env);
    for (std::string field; std::getline(fields, field, ',');) {
        auto eq = field.find('=');
        if (eq == std::string::npos) bad_tuning(env, cat("`", field, "` has no `=`"));
        std::string key = field.substr(0, eq), value = field.substr(eq + 1);
        auto number = [&](const std::string& text) {
            char* end = nullptr;
            long v = std::strtol(text.c_str(), &end, 10);
            if (text.empty() || *end || v <= 0 || v > 4096) bad_tuning(env, cat("`", field, "`: not a count"));
            return static_cast<int>(v);
        };
        auto pair = [&](int& a, int& b) {
            auto x = value.find('x');
            if (x == std::string::npos) bad_tuning(env, cat("`", field, "`: expected AxB"));
            a = number(value.substr(0, x)), b = number(value.substr(x + 1));
        };
        if (key == "rows") pair(t.row_threads, t.row_items), rows = true;
        else if (key == "sitems") t.shared_items = number(value), shared_items = true;
        else if (key == "scitems") t.scalar_items = number(value), scalar_items = true;
        else if (key == "smb") t.shared_min_blocks = number(value), shared_min_blocks = true;
        else if (key == "window") t.row_window = number(value);
        else if (key == "pcopies" && number(value) <= 32) t.row_pcopies = number(value);
        else if (key == "cols") pair(t.col_warps, t.col_rows);
        else if (key == "clanes" && (value == "8" || value == "16" || value == "32")) t.col_lanes = number(value);
        else if (key == "flanes" && (value == "0" || value == "8" || value == "16" || value == "32"))
            t.few_lines_lanes = value == "0" ? 0 : number(value);
        else if (key == "cwin") t.col_window = number(value);
        else if (key == "mb") t.min_blocks = number(value), min_blocks = true;
        else if (key == "cmb") t.col_min_blocks = number(value);
        else if (key == "res") pair(t.res_threads, t.res_items);
        else if (key == "rmb") t.res_min_blocks = number(value);
        else if (key == "cmajor" && (value == "0" || value == "1")) t.row_band = value == "1" ? 0 : 1;
        else if (key == "rband") t.row_band = value == "0" ? 0 : number(value);
        else if (key == "rgroups" && (value == "0" || value == "1")) t.res_groups = value == "1";
        else if (key == "tickets" && (value == "0" || value == "1")) t.tickets = value == "1";
        else if (key == "nondet" && (value == "0" || value == "1")) t.nondeterministic = value == "1";
        else if (key == "stamps" && (value == "0" || value == "1")) t.stamps = value == "1";
        else if (key == "fixsteps" && (value == "0" || value == "1")) t.fixed_steps = value == "1";
        else if (key == "vec" && (value == "0" || value == "1")) t.vector_rows = value == "1";
        else if (key == "skip" && (value == "0" || value == "1")) t.row_skip = value == "1";
        else if (key == "prefetch") t.row_prefetch = value == "0" ? 0 : number(value);
        else bad_tuning(env, cat("unknown key or value in `", field, "`"));
    }
    if (t.row_threads % 32 || t.res_threads % 32 || t.row_window % 32)
        bad_tuning(env, "threads and window must be multiples of 32");
    if (rows && !shared_items) t.shared_items = 0;
    if (rows && !scalar_items) t.scalar_items = 0;
    if (min_blocks && !shared_min_blocks) t.shared_min_blocks = 0;
    if (t.shared_row_items() > std::min(t.row_items, t.scalar_row_items()))
        bad_tuning(env, "sitems must not exceed the rows' items (nor scitems)");
}

}  // namespace

std::string Tuning::str() const {
    return cat("rows ", row_threads, "x", row_items, " (scalar x", scalar_row_items(), ") w", row_window, " x", row_pcopies,
               " (one tile ",
               row_threads, "x", shared_row_items(), " at ", shared_rows_min_blocks(), "), cols ", col_warps, "x",
               col_rows, col_lanes == 32 ? "" : cat(" of ", col_lanes, " lanes"),
               few_lines_lanes ? cat(" (few lines: ", few_lines_lanes, " lanes)") : "", " w", col_window, ", map ", map_threads, ", min blocks ", min_blocks, "/",
               cols_min_blocks(), ", resident ", res_threads, "x", res_items, " at ", res_min_blocks,
               res_groups ? "" : ", no lane groups",
               row_band == 1 ? ", row-major tiles" : row_band ? cat(", tiles in bands of ", row_band, " rows") : "",
               tickets ? ", tickets" : "", nondeterministic ? ", nondeterministic" : "",
               stamps ? ", stamps" : "", fixed_steps ? "" : ", steps as arguments",
               vector_rows ? "" : ", no vector rows", row_skip ? ", window prefixes skip" : "",
               row_prefetch ? cat(", prefetch ", row_prefetch, " tiles ahead") : "");
}

Tuning choose_tuning(int state_words, int cc, int combine_weight) {
    const Row* row = &kTable[std::size(kTable) - 1];
    for (const Row& r : kTable)
        if (state_words <= r.max_words && cc >= r.min_cc) {
            row = &r;
            break;
        }
    Tuning t = row->tuning;
    // A heavy combine (a transcendental function or more) unrolled over 96 items outgrows the
    // instruction cache: logcumsumexp 1-D, 16,184 instructions, stalled on no_instruction at 9.3%
    // of copy, and read 25.6% at 32 items (nineteenth session). Max kept 96 (72.5 against 64.3%).
    // Since logaddexp's own 36 instructions (fifty-fourth session) 64 one-word items fit: lse 1-D
    // 42.5 -> 51.5% on an H100. Code grows with items x words, so wider states keep 32 items;
    // rows of one tile keep the table's 32 (at 64, lse rows lost 70.5 -> 46.2%).
    // Such a combine keeps the SM's issue slots, not DRAM, busy, and its tiles wait on its
    // latency: at the table's 3 look-back rows and 2 cols blocks an SM, 12 and 16 warps, lse 1-D
    // and dim 0 issued 0.47-0.49 instructions a cycle per scheduler. 4 blocks an SM of both
    // (fifty-fifth session, H100): lse 1-D 51.9 -> 57.4%, dim 0 42.9 -> 58.4% (its 64 registers
    // spill some, and still won over 8x16 tiles without spills, 53.9%). Look-back rows tiles
    // hold 64 state words whatever the state; cols tiles hold 32 steps of it, so wider states
    // keep fewer cols blocks: online softmax's pair (8 bytes) 1-D 73.2 -> 82.9% at 4 look-back
    // blocks, and dim 0 82.4 -> 71.7% at 3 cols blocks, 48.2% at 4.
    if (combine_weight >= kHeavyCombine) {
        const int words = std::max(state_words, 1), items = kHeavyCombineWords / words;
        t.row_items = std::min(t.row_items, items);
        t.scalar_items = std::min(t.scalar_row_items(), items);
        if (row->min_cc >= 90) {  // the rows measured there (the generic ones keep theirs)
            t.col_min_blocks = std::max(t.cols_min_blocks(), kHeavyCombineMinBlocks / words);
            t.min_blocks = std::max(t.min_blocks, kHeavyCombineMinBlocks);
        }
    }
    if (const char* env = std::getenv("SCANC_CUDA_TUNING"); env && *env) apply_overrides(t, env);
    return t;
}

int transpose_smem_bytes(int threads, int items, int state_words, bool vec) {
    int seg = 32 * items;
    return threads / 32 * state_words * (seg + (vec ? seg / 8 : seg / 32)) * 4;
}

}  // namespace scanc::cuda
