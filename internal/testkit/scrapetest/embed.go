package scrapetest

import _ "embed"

// DCGM4GPU2Pods is a dcgm-exporter /metrics text of one node with four
// NVIDIA L4 GPUs: GPUs 0 and 1 are attributed to pod rl/trainer-a-0,
// GPUs 2 and 3 to pod rl/trainer-b-0 (container "trainer"). It is a real
// single-GPU recording extended to four GPUs the way dcgm-exporter renders
// them; testdata/README.md lists every change. Do not modify the slice.
//
//go:embed testdata/dcgm-4gpu-2pods.txt
var DCGM4GPU2Pods []byte

// VLLMV1 is a verbatim /metrics text of a vLLM V1 OpenAI server (labels
// engine and model_name), recorded right after start-up: every counter and
// histogram is zero. testdata/README.md says where it comes from. Do not
// modify the slice.
//
//go:embed testdata/vllm-v1.txt
var VLLMV1 []byte
