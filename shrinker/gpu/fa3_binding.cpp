// shrinker's binding of FlashAttention's hopper FA3 kernels as sgl_kernel's `flash_ops` module.
//
// sgl_kernel/flash_attn.py (the wheel's Python) imports `sgl_kernel.flash_ops` and calls
// torch.ops.sgl_kernel.fwd.default(...) and torch.ops.sgl_kernel.get_scheduler_metadata(...).
// Upstream builds those ops from sgl-attn (not public); this file registers the same names with the
// same schemas (copied from the prebuilt flash_ops of the wheel, checked by shrinker/gpu/fa3.py)
// and implements them with FlashAttention's mha_fwd / mha_fwd_get_scheduler_metadata
// (hopper/flash_api.cpp, compiled beside this file). Arguments FlashAttention's API lacks, or
// features this slim build compiled out, fail with a TORCH_CHECK naming them: never ignored.

#include <Python.h>

#include <optional>
#include <tuple>

#include <ATen/core/Tensor.h>
#include <c10/util/Exception.h>
#include <torch/library.h>

// hopper/flash_api.cpp (FlashAttention), same translation unit set, external linkage.
std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor> mha_fwd(
    at::Tensor q, at::Tensor k, at::Tensor v, std::optional<at::Tensor> k_new_, std::optional<at::Tensor> v_new_,
    std::optional<at::Tensor> q_v_, std::optional<at::Tensor> out_, std::optional<at::Tensor> cu_seqlens_q_,
    std::optional<at::Tensor> cu_seqlens_k_, std::optional<at::Tensor> cu_seqlens_k_new_,
    std::optional<at::Tensor> seqused_q_, std::optional<at::Tensor> seqused_k_, std::optional<int64_t> max_seqlen_q_,
    std::optional<int64_t> max_seqlen_k_, std::optional<at::Tensor> page_table_,
    std::optional<at::Tensor> kv_batch_idx_, std::optional<at::Tensor> leftpad_k_,
    std::optional<at::Tensor> rotary_cos_, std::optional<at::Tensor> rotary_sin_,
    std::optional<at::Tensor> seqlens_rotary_, std::optional<at::Tensor> q_descale_,
    std::optional<at::Tensor> k_descale_, std::optional<at::Tensor> v_descale_, std::optional<double> softmax_scale_,
    bool is_causal, int64_t window_size_left, int64_t window_size_right, int64_t attention_chunk, double softcap,
    bool is_rotary_interleaved, std::optional<at::Tensor> scheduler_metadata_, int64_t num_splits,
    std::optional<bool> pack_gqa_, int64_t sm_margin);

at::Tensor mha_fwd_get_scheduler_metadata(
    int64_t batch_size, int64_t max_seqlen_q, int64_t max_seqlen_k, int64_t num_heads, int64_t num_heads_k,
    int64_t headdim, int64_t headdim_v, at::ScalarType qkv_dtype, at::Tensor seqused_k,
    std::optional<at::Tensor> cu_seqlens_q_, std::optional<at::Tensor> cu_seqlens_k_,
    std::optional<at::Tensor> cu_seqlens_k_new_, std::optional<at::Tensor> seqused_q_,
    std::optional<at::Tensor> leftpad_k_, std::optional<int64_t> page_size, int64_t max_seqlen_k_new, bool is_causal,
    int64_t window_size_left, int64_t window_size_right, int64_t attention_chunk, bool has_softcap,
    int64_t num_splits, std::optional<bool> pack_gqa_, int64_t sm_margin);

namespace {

#define SLIM "flash_ops (shrinker's slim FA3 build from FlashAttention's hopper sources): "

// The 34 arguments FlashAttention's mha_fwd takes come first, in its order; sgl-attn appends sinks,
// sparse_mask_fine and only_qv, which FlashAttention has no kernels for.
std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor> sgl_fwd(
    at::Tensor q, at::Tensor k, at::Tensor v, std::optional<at::Tensor> k_new, std::optional<at::Tensor> v_new,
    std::optional<at::Tensor> q_v, std::optional<at::Tensor> out, std::optional<at::Tensor> cu_seqlens_q,
    std::optional<at::Tensor> cu_seqlens_k, std::optional<at::Tensor> cu_seqlens_k_new,
    std::optional<at::Tensor> seqused_q, std::optional<at::Tensor> seqused_k, std::optional<int64_t> max_seqlen_q,
    std::optional<int64_t> max_seqlen_k, std::optional<at::Tensor> page_table, std::optional<at::Tensor> kv_batch_idx,
    std::optional<at::Tensor> leftpad_k, std::optional<at::Tensor> rotary_cos, std::optional<at::Tensor> rotary_sin,
    std::optional<at::Tensor> seqlens_rotary, std::optional<at::Tensor> q_descale,
    std::optional<at::Tensor> k_descale, std::optional<at::Tensor> v_descale, std::optional<double> softmax_scale,
    bool is_causal, int64_t window_size_left, int64_t window_size_right, int64_t attention_chunk, double softcap,
    bool is_rotary_interleaved, std::optional<at::Tensor> scheduler_metadata, int64_t num_splits,
    std::optional<bool> pack_gqa, int64_t sm_margin, std::optional<at::Tensor> sinks,
    std::optional<at::Tensor> sparse_mask_fine, bool only_qv) {
  // sgl-attn only: FlashAttention's kernels have no such inputs.
  TORCH_CHECK(!sinks.has_value(), SLIM "attention sinks (sinks=) are not supported");
  TORCH_CHECK(!sparse_mask_fine.has_value(), SLIM "sparse_mask_fine is not supported");
  TORCH_CHECK(!only_qv, SLIM "only_qv=True is not supported");
  // Compiled out here, and FlashAttention would not refuse them itself.
  TORCH_CHECK(!k_new.has_value() && !v_new.has_value(),
              SLIM "appending K/V in the kernel (k=/v= of flash_attn_with_kvcache) is compiled out "
                   "(FLASHATTENTION_DISABLE_APPENDKV)");
  TORCH_CHECK(softcap == 0.0, SLIM "softcap is compiled out (FLASHATTENTION_DISABLE_SOFTCAP), got ", softcap);
  TORCH_CHECK(!pack_gqa.value_or(false), SLIM "pack_gqa=True is compiled out (FLASHATTENTION_DISABLE_PACKGQA)");
  return mha_fwd(q, k, v, k_new, v_new, q_v, out, cu_seqlens_q, cu_seqlens_k, cu_seqlens_k_new, seqused_q, seqused_k,
                 max_seqlen_q, max_seqlen_k, page_table, kv_batch_idx, leftpad_k, rotary_cos, rotary_sin,
                 seqlens_rotary, q_descale, k_descale, v_descale, softmax_scale, is_causal, window_size_left,
                 window_size_right, attention_chunk, softcap, is_rotary_interleaved, scheduler_metadata, num_splits,
                 pack_gqa, sm_margin);
}

at::Tensor sgl_get_scheduler_metadata(
    int64_t batch_size, int64_t max_seqlen_q, int64_t max_seqlen_k, int64_t num_heads, int64_t num_heads_k,
    int64_t headdim, int64_t headdim_v, at::ScalarType qkv_dtype, at::Tensor seqused_k,
    std::optional<at::Tensor> cu_seqlens_q, std::optional<at::Tensor> cu_seqlens_k,
    std::optional<at::Tensor> cu_seqlens_k_new, std::optional<at::Tensor> seqused_q,
    std::optional<at::Tensor> leftpad_k, std::optional<int64_t> page_size, int64_t max_seqlen_k_new, bool is_causal,
    int64_t window_size_left, int64_t window_size_right, int64_t attention_chunk, bool has_softcap,
    int64_t num_splits, std::optional<bool> pack_gqa, int64_t sm_margin) {
  TORCH_CHECK(!has_softcap, SLIM "softcap is compiled out (FLASHATTENTION_DISABLE_SOFTCAP)");
  TORCH_CHECK(!pack_gqa.value_or(false), SLIM "pack_gqa=True is compiled out (FLASHATTENTION_DISABLE_PACKGQA)");
  return mha_fwd_get_scheduler_metadata(batch_size, max_seqlen_q, max_seqlen_k, num_heads, num_heads_k, headdim,
                                        headdim_v, qkv_dtype, seqused_k, cu_seqlens_q, cu_seqlens_k, cu_seqlens_k_new,
                                        seqused_q, leftpad_k, page_size, max_seqlen_k_new, is_causal,
                                        window_size_left, window_size_right, attention_chunk, has_softcap, num_splits,
                                        pack_gqa, sm_margin);
}

}  // namespace

// The schemas of sglang-kernel 0.4.5's flash_ops (sgl-kernel/csrc/flash_extension.cc), word for word.
// BEGIN SCHEMAS
TORCH_LIBRARY_FRAGMENT(sgl_kernel, m) {
  m.def(
      "fwd(Tensor   q,"
      "    Tensor   k,"
      "    Tensor   v,"
      "    Tensor?  k_new,"
      "    Tensor?  v_new,"
      "    Tensor?  q_v,"
      "    Tensor(a!)?  out,"
      "    Tensor?  cu_seqlens_q,"
      "    Tensor?  cu_seqlens_k,"
      "    Tensor?  cu_seqlens_k_new,"
      "    Tensor?  seqused_q,"
      "    Tensor?  seqused_k,"
      "    int?     max_seqlen_q,"
      "    int?     max_seqlen_k,"
      "    Tensor?  page_table,"
      "    Tensor?  kv_batch_idx,"
      "    Tensor?  leftpad_k,"
      "    Tensor?  rotary_cos,"
      "    Tensor?  rotary_sin,"
      "    Tensor?  seqlens_rotary,"
      "    Tensor?  q_descale,"
      "    Tensor?  k_descale,"
      "    Tensor?  v_descale,"
      "    float?   softmax_scale,"
      "    bool     is_causal,"
      "    int      window_size_left,"
      "    int      window_size_right,"
      "    int      attention_chunk,"
      "    float    softcap,"
      "    bool     is_rotary_interleaved,"
      "    Tensor?  scheduler_metadata,"
      "    int      num_splits,"
      "    bool?    pack_gqa,"
      "    int      sm_margin,"
      "    Tensor?  sinks,"
      "    Tensor?  sparse_mask_fine,"
      "    bool     only_qv) -> (Tensor(a!), Tensor, Tensor, Tensor)");
  m.def(
      "get_scheduler_metadata("
      "    int      batch_size,"
      "    int      max_seqlen_q,"
      "    int      max_seqlen_k,"
      "    int      num_heads,"
      "    int      num_heads_k,"
      "    int      headdim,"
      "    int      headdim_v,"
      "    ScalarType qkv_dtype,"
      "    Tensor   seqused_k,"
      "    Tensor?  cu_seqlens_q,"
      "    Tensor?  cu_seqlens_k,"
      "    Tensor?  cu_seqlens_k_new,"
      "    Tensor?  seqused_q,"
      "    Tensor?  leftpad_k,"
      "    int?     page_size,"
      "    int      max_seqlen_k_new = 0,"
      "    bool     is_causal = False,"
      "    int      window_size_left = -1,"
      "    int      window_size_right = -1,"
      "    int      attention_chunk = 0,"
      "    bool     has_softcap = False,"
      "    int      num_splits = 0,"
      "    bool?    pack_gqa = None,"
      "    int      sm_margin = 0) -> Tensor");
}
// END SCHEMAS

TORCH_LIBRARY_IMPL(sgl_kernel, CUDA, m) {
  m.impl("fwd", &sgl_fwd);
  m.impl("get_scheduler_metadata", &sgl_get_scheduler_metadata);
}

// `from sgl_kernel import flash_ops` runs this; loading the library ran the registrations above.
PyMODINIT_FUNC PyInit_flash_ops(void) {
  static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "flash_ops", nullptr, -1, nullptr};
  return PyModule_Create(&module);
}
