// ONNX Runtime's contrib operators (domain com.microsoft), which its
// transformer optimizer, its quantizer and onnxruntime-genai write into saved
// models: each node becomes standard ONNX operators of the model's default
// opset before ONNX's checker and shape inference see the model (Unsqueeze,
// Reduce*, Split, Slice and Clip take their opset's form; LayerNormalization
// from opset 17, its decomposition before). The semantics are ONNX Runtime's
// CPU kernels' (checked against onnxruntime-node 1.30 by
// tests/e2e/ort_contrib_ops.py and contrib_ops.py). Float operators compute
// in float32: a float16/double input is refused.
//
// Activations and normalizations
//   FastGelu (X[, bias])          0.5 x (1 + tanh(x (0.7978845608 + 0.0356774081 x^2)))
//   Gelu, BiasGelu (A, B)         the erf form (of A + B)
//   QuickGelu                     x sigmoid(alpha x), alpha (1.702)
//   BiasAdd (X, bias, skip)       X + bias + skip
//   SkipLayerNormalization        (input, skip, gamma[, beta][, bias]), epsilon; outputs output and
//                                 input_skip_bias_sum (mean, inv_std_var refused)
//   SkipSimplifiedLayerNormalization  (input, skip, gamma[, bias]): RMS norm; the same outputs
//   SimplifiedLayerNormalization  (X, scale), axis, epsilon: RMS norm over the axes from `axis` on;
//                                 also in the default domain, where ONNX Runtime writes it
//   EmbedLayerNormalization       (ids, segment_ids, word, position, segment embeddings, gamma,
//                                 beta[, mask][, position_ids]) -> output, mask_index (the count
//                                 of mask == 1, zeros without a mask), embedding_sum
// Matrix products and convolutions
//   FusedMatMul                   alpha, transA/transB, transBatchA/transBatchB
//   FusedConv                     Conv + Z (added before the activation) + activation: Relu, Tanh,
//                                 Sigmoid, LeakyRelu, HardSigmoid, Clip (activation_params required)
//   NhwcConv                      X [N, D.., C], W [M, k.., C/group] -> Y [N, D.., M]
// Attention (softmax(Q K^T scale + masks) V, the form fuse-attention fuses)
//   Attention                     input x weights (+ bias), qkv_hidden_sizes, num_heads, scale,
//                                 mask_filter_value, unidirectional; mask_index: key lengths (B),
//                                 end/start (2B), raw [B, T], [B, S, T], Megatron [B, 1, M, M]
//                                 (rows P..P+S, ONNX Runtime's CUDA reading); past [2, B, N, P, H]
//                                 -> present; attention_bias. Refused: do_rotary,
//                                 past_present_share_buffer, past_sequence_length, (3B + 2) masks.
//   QAttention                    the same after MatMulInteger (input/weight zero points, per-column
//                                 weight scale) times input_scale * weight_scale + bias
//   MultiHeadAttention            query/key/value [B, S, D] (+ bias), key/value [B, N, L, H] (bias
//                                 on the query only), packed KV [B, L, N, 2, H] and QKV
//                                 [B, S, N, 3, H] (no bias); key_padding_mask as Attention's;
//                                 attention_bias; past_key/past_value -> present_key/value;
//                                 unidirectional (ONNX Runtime's: query row s < S - 1 hides keys
//                                 t > P + s). Refused: past_sequence_length, cache_indirection, qk.
//   GroupQueryAttention           query/key/value or packed QKV, kv_num_heads, past_key/value
//                                 [B, Nkv, P, H] with seqlens_k per batch (the new rows written at
//                                 each batch's past length; present has P + S rows), first prompt
//                                 when S == total_sequence_length, do_rotary (cos/sin caches,
//                                 interleaved, partial widths, position_ids), local_window_size (the
//                                 last w keys, ONNX Runtime 1.30's), softcap, smooth_softmax,
//                                 head_sink, attention_bias, scale. Refused: qk_output. A shared
//                                 past/present buffer (past longer than total_sequence_length -
//                                 S) gives P + S present rows where ONNX Runtime keeps P.
//   RotaryEmbedding               [B, S, D] (num_heads, or the cache's width) and [B, N, S, H];
//                                 position_ids [B, S] or a start [1]; interleaved;
//                                 rotary_embedding_dim. Refused: is_packed_batching, scale != 1.
// Quantized
//   QGemm, QLinearAdd, QLinearMul, QLinearGlobalAveragePool, QLinearAveragePool, QLinearConcat,
//   QLinearSigmoid, QLinearLeakyRelu: DequantizeLinear -> the float operator -> QuantizeLinear
//                                 (docs/int8.md); channels_last refused
//   MatMulNBits                   bits 2, 4, 8; block_size, K, N; zero points packed uint8, float,
//                                 or absent (2^(bits-1)); bias. The weight is dequantized by
//                                 standard operators, which constant folding turns into a float32
//                                 constant; the MatMul is float (accuracy_level ignored). Refused:
//                                 g_idx, other bit widths.
//   MatMulIntegerToFloat          MatMulInteger, Cast, * a_scale * b_scale (+ bias)
//   DynamicQuantizeMatMul         DynamicQuantizeLinear of A, then as MatMulIntegerToFloat
//   DynamicQuantizeLSTM           LSTM on W and R dequantized (per-tensor or per-channel) and
//                                 transposed to ONNX's layout; float, where ONNX Runtime
//                                 quantizes X and H at run time (differences within 1e-2)
// Values whose rank an expansion needs (masks, FusedMatMul's transposed operands) come from the
// model's value_info or ONNX's inference over the nodes before; when unknown the node is refused.
// Any other com.microsoft operator stays, and the import refuses it by name.
#pragma once

#include <onnx/onnx_pb.h>

namespace kiln {

// Rewrites the contrib nodes of the main graph (and its subgraphs) in place;
// throws UserError for a malformed one or a form it does not handle (naming
// the node).
void expand_contrib_ops(onnx::ModelProto& model);

// The contrib operators expand_contrib_ops handles, for error messages.
const char* supported_contrib_ops();

}  // namespace kiln
