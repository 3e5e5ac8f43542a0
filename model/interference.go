package model

// DefaultInterference is the default noisy-neighbour coefficient of a GPU:
// a running job slows by a factor 1/(1 + DefaultInterference × u/100),
// where u is the summed util of the other jobs running on the same GPU,
// even when the GPU is not saturated (saturation, summed util above 100%,
// slows jobs further in proportion).
//
// 0.3 means a job sharing a GPU with co-runners that keep it fully busy
// runs about 23% slower (1/1.3), and one beside a co-runner at 50% util
// about 13% slower (1/1.15). The size comes from published measurements of
// co-located work on one GPU: co-execution through MPS loses around 30% of
// performance when the co-runners contend for memory (“A comprehensive
// evaluation of spatial co-execution on GPUs using MPS and MIG”, arXiv
// 2604.22430, 2026), and co-located training runs each see longer epoch
// times even while the GPU's total throughput rises (Robroek, Yousefzadeh-
// Asl-Miandoab and Tözün, “An Analysis of Collocation on GPUs for Deep
// Learning Training”, EuroMLSys 2024, arXiv 2209.06018). Interference
// varies widely by workload (TensorShare reports JCT increases varying by
// 3.7×); the coefficient is a flag (--interference) for that reason.
const DefaultInterference = 0.3
