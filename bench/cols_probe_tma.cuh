// The cols probes' bulk tensor copies (bench/cols_walk_probe.cu, bench/cols_pipe_probe.cu):
// mbarriers, 3-D bulk tensor loads into shared memory and stores out of it, and the tensor maps
// they read (cuTensorMapEncodeTiled, found through the runtime so nothing links libcuda).
#pragma once

#include <cuda.h>
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>

__device__ __forceinline__ unsigned smem_addr(const void* p) { return (unsigned)__cvta_generic_to_shared(p); }
// An mbarrier whose phase completes after `arrivals` arrivals (and the transactions expected).
__device__ __forceinline__ void mbar_init(unsigned long long* b, unsigned arrivals = 1) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_addr(b)), "r"(arrivals) : "memory");
}
__device__ __forceinline__ void mbar_arrive(unsigned long long* b) {
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(smem_addr(b)) : "memory");
}
// Bulk stores: commit those issued so far as a group; wait until at most N groups still read
// shared memory (N an immediate).
__device__ __forceinline__ void bulk_commit() { asm volatile("cp.async.bulk.commit_group;" ::: "memory"); }
template <int N> __device__ __forceinline__ void bulk_wait_read() { asm volatile("cp.async.bulk.wait_group.read %0;" ::"n"(N) : "memory"); }
__device__ __forceinline__ void mbar_expect(unsigned long long* b, unsigned bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_addr(b)), "r"(bytes) : "memory");
}
__device__ __forceinline__ void mbar_wait(unsigned long long* b, unsigned parity) {
    asm volatile("{\n .reg .pred p;\n WAIT_%=: mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n @!p bra WAIT_%=;\n}\n"
                 ::"r"(smem_addr(b)), "r"(parity) : "memory");
}
__device__ __forceinline__ void tma_load(void* dst, const CUtensorMap* m, int c0, int c1, int c2, unsigned long long* b) {
    asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4}], [%5];"
                 ::"r"(smem_addr(dst)), "l"(m), "r"(c0), "r"(c1), "r"(c2), "r"(smem_addr(b)) : "memory");
}
__device__ __forceinline__ void tma_store(const CUtensorMap* m, int c0, int c1, int c2, const void* src) {
    asm volatile("cp.async.bulk.tensor.3d.global.shared::cta.bulk_group [%0, {%1, %2, %3}], [%4];"
                 ::"l"(m), "r"(c0), "r"(c1), "r"(c2), "r"(smem_addr(src)) : "memory");
}
// Aligned by an offset from the shared array itself (not through an integer cast), so that the
// compiler keeps its address space: ld.shared, not generic loads.
__device__ __forceinline__ unsigned char* aligned_smem(unsigned char* raw) {
    return raw + ((1024u - (smem_addr(raw) & 1023u)) & 1023u);
}

typedef CUresult (*EncodeFn)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*, const cuuint64_t*, const cuuint64_t*,
                             const cuuint32_t*, const cuuint32_t*, CUtensorMapInterleave, CUtensorMapSwizzle,
                             CUtensorMapL2promotion, CUtensorMapFloatOOBfill);
inline EncodeFn encode = nullptr;

// A 3-D map of the f32 tensor [O][T][C] at p, boxes of [L, S, 1] (C fastest).
inline void make_map(CUtensorMap* m, const float* p, long long O, long long T, long long C, int L, int S) {
    if (!encode) {
        cudaDriverEntryPointQueryResult q;
        if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", (void**)&encode, 12000, cudaEnableDefault, &q) != cudaSuccess) {
            std::printf("cuTensorMapEncodeTiled not found\n");
            std::exit(1);
        }
    }
    cuuint64_t dims[3] = {(cuuint64_t)C, (cuuint64_t)T, (cuuint64_t)O};
    cuuint64_t strides[2] = {(cuuint64_t)C * 4, (cuuint64_t)(C * T * 4)};
    cuuint32_t box[3] = {(cuuint32_t)L, (cuuint32_t)S, 1}, es[3] = {1, 1, 1};
    if (encode(m, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 3, (void*)p, dims, strides, box, es, CU_TENSOR_MAP_INTERLEAVE_NONE,
               CU_TENSOR_MAP_SWIZZLE_NONE, CU_TENSOR_MAP_L2_PROMOTION_L2_128B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) != CUDA_SUCCESS) {
        std::printf("cuTensorMapEncodeTiled failed\n");
        std::exit(1);
    }
}
