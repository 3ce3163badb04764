"""Expert for chunked_prefill on the CPU: the fp32 reference, rounded to bf16.

There is no production attention kernel to compare against without a GPU; CPU grades
check correctness and report CPU times against this. On the GPU the expert is cuDNN
(expert_cuda.py).
"""

from env_suites.chunked_prefill import reference


def kernel(q, k_cache, v_cache, block_table, cache_seqlens, cu_seqlens_q, max_seqlen_q, softmax_scale):
    o = reference.attention(q, k_cache, v_cache, block_table, cache_seqlens, cu_seqlens_q, softmax_scale)
    return o.to(q.dtype)
