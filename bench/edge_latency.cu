// What a dependency between two kernels of a token costs, apart from their work: a CUDA graph of a decoded
// token's kernel pattern (per layer: a 1-block norm, a matvec grid, attention, a matvec grid, a norm, two matvec
// grids), each kernel reading what the previous one wrote and writing its own output, with no weights. Four ways
// of ordering them, side by side in one run:
//   plain  stream order (each kernel starts when the previous one has completed)
//   pdl    programmatic dependent launch: launch_dependents at the start, griddepcontrol.wait before the read
//          (the engine's way)
//   flag   launched as pdl, but a block waits for a counter instead: each block of the previous kernel adds 1 to
//          it after its writes (threadfence, then a release add), and the next kernel's blocks spin (acquire
//          loads, nanosleep) until it reaches that kernel's grid; the counters are zeroed at the graph's start
//   flag+  flag, and each kernel also ends with griddepcontrol.wait (so no kernel completes before the one
//          ahead of it: the engine's kernels may depend on that)
// Prints µs a layer and a kernel for each, and the ratios to pdl. A development tool (not run by tests).
// usage: edge_latency [--layers N] [--replays N] [--matvec-blocks B] [--work N]
#include <cuda_runtime.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CK(x)                                                                                   \
    do {                                                                                        \
        cudaError_t e_ = (x);                                                                   \
        if (e_ != cudaSuccess) {                                                                \
            fprintf(stderr, "edge_latency: %s: %s (line %d)\n", #x, cudaGetErrorString(e_), __LINE__); \
            exit(1);                                                                            \
        }                                                                                       \
    } while (0)

enum Mode { kPlain, kPdl, kFlag, kFlagTail };
static const char *kModeNames[] = {"plain", "pdl", "flag", "flag+"};

struct Edge {
    const float *in;
    float *out;
    int n_in, n_out;
    unsigned *wait_on; // the previous kernel's counter (flag modes), or NULL
    unsigned wait_for; // its blocks
    unsigned *signal;  // this kernel's counter (flag modes), or NULL
    int mode, work;
};

__device__ __forceinline__ unsigned load_acquire(const unsigned *p)
{
    unsigned v;
    asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
}

__global__ void __launch_bounds__(256) step(Edge e)
{
    if (e.mode != kPlain) asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
    if (e.mode == kPdl) asm volatile("griddepcontrol.wait;" ::: "memory");
    if ((e.mode == kFlag || e.mode == kFlagTail) && e.wait_on) {
        if (threadIdx.x == 0)
            while (load_acquire(e.wait_on) < e.wait_for) __nanosleep(20);
        __syncthreads();
    }
    // read the whole input (as a matvec reads x), a little arithmetic, write this block's part of the output
    float acc = 0.f;
    for (int i = threadIdx.x; i < e.n_in; i += blockDim.x) acc += __ldcg(e.in + i);
    for (int k = 0; k < e.work; k++) acc = acc * 0.999f + 1.f;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < e.n_out; i += gridDim.x * blockDim.x) e.out[i] = acc;
    if (e.signal) {
        __syncthreads();
        if (threadIdx.x == 0) {
            __threadfence();
            atomicAdd(e.signal, 1u);
        }
    }
    if (e.mode == kFlagTail) asm volatile("griddepcontrol.wait;" ::: "memory");
}

int main(int argc, char **argv)
{
    int layers = 28, replays = 50, mv = 264, work = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--layers") && i + 1 < argc) layers = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--replays") && i + 1 < argc) replays = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--matvec-blocks") && i + 1 < argc) mv = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--work") && i + 1 < argc) work = atoi(argv[++i]);
        else { fprintf(stderr, "edge_latency: unknown argument %s\n", argv[i]); return 2; }
    }
    if (layers < 1 || replays < 1 || mv < 1) { fprintf(stderr, "edge_latency: want positive counts\n"); return 2; }
    // a layer: norm, qkv, attention, o, norm, gate_up, down (grids, outputs of Qwen2.5-7B's sizes)
    const int grid[7] = {1, mv, 280, mv, 1, mv, mv};
    const int outs[7] = {3584, 4608, 3584, 3584, 3584, 37888, 3584};
    const int kernels = 7 * layers;
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    printf("device: %s, %d SMs; %d layers of 7 kernels (grids 1, %d, 280, %d, 1, %d, %d), work %d\n", prop.name,
           prop.multiProcessorCount, layers, mv, mv, mv, mv, work);
    float *buf[2];
    CK(cudaMalloc(&buf[0], 64 << 10 << 2));
    CK(cudaMalloc(&buf[1], 64 << 10 << 2));
    CK(cudaMemset(buf[0], 0, 64 << 10 << 2));
    CK(cudaMemset(buf[1], 0, 64 << 10 << 2));
    unsigned *counters;
    CK(cudaMalloc(&counters, sizeof(unsigned) * (size_t)kernels));
    cudaStream_t st;
    CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
    double us[4] = {0};
    for (int round = 0; round < 2; round++) // the second round's figures are printed (the first warms up)
        for (int mode = 0; mode < 4; mode++) {
            cudaGraph_t g;
            CK(cudaStreamBeginCapture(st, cudaStreamCaptureModeGlobal));
            CK(cudaMemsetAsync(counters, 0, sizeof(unsigned) * (size_t)kernels, st));
            for (int k = 0; k < kernels; k++) {
                int kind = k % 7, prev = (k + 6) % 7;
                Edge e;
                e.in = buf[k & 1];
                e.out = buf[(k + 1) & 1];
                e.n_in = outs[prev];
                e.n_out = outs[kind];
                bool flags = mode == kFlag || mode == kFlagTail;
                e.wait_on = flags && k > 0 ? counters + k - 1 : NULL;
                e.wait_for = (unsigned)grid[prev];
                e.signal = flags ? counters + k : NULL;
                e.mode = mode;
                e.work = work;
                cudaLaunchConfig_t cfg = {};
                cfg.gridDim = dim3((unsigned)grid[kind]);
                cfg.blockDim = dim3(256);
                cfg.stream = st;
                cudaLaunchAttribute attr;
                attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
                attr.val.programmaticStreamSerializationAllowed = 1;
                if (mode != kPlain && k > 0) {
                    cfg.attrs = &attr;
                    cfg.numAttrs = 1;
                }
                CK(cudaLaunchKernelEx(&cfg, step, e));
            }
            CK(cudaStreamEndCapture(st, &g));
            cudaGraphExec_t ge;
            CK(cudaGraphInstantiate(&ge, g, 0));
            CK(cudaGraphLaunch(ge, st));
            CK(cudaStreamSynchronize(st));
            cudaEvent_t a, b;
            CK(cudaEventCreate(&a));
            CK(cudaEventCreate(&b));
            CK(cudaEventRecord(a, st));
            for (int r = 0; r < replays; r++) CK(cudaGraphLaunch(ge, st));
            CK(cudaEventRecord(b, st));
            CK(cudaEventSynchronize(b));
            float ms;
            CK(cudaEventElapsedTime(&ms, a, b));
            us[mode] = 1000.0 * ms / replays;
            CK(cudaGraphExecDestroy(ge));
            CK(cudaGraphDestroy(g));
            CK(cudaEventDestroy(a));
            CK(cudaEventDestroy(b));
        }
    printf("%-6s %12s %12s %12s %9s\n", "mode", "us a replay", "us a layer", "us a kernel", "vs pdl");
    for (int mode = 0; mode < 4; mode++)
        printf("%-6s %12.1f %12.2f %12.3f %8.3fx\n", kModeNames[mode], us[mode], us[mode] / layers, us[mode] / kernels, us[mode] / us[kPdl]);
    return 0;
}
