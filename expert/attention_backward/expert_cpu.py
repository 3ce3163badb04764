"""Expert for attention_backward on the CPU: the fp32 reference gradients, rounded to bf16.

There is no production attention kernel to compare against without a GPU; CPU grades
check correctness and report CPU times against this. On the GPU the expert is cuDNN
(expert_cuda.py).
"""

from env_suites.attention_backward import reference


def kernel(q, k, v, o, lse, do, cu_seqlens, max_seqlen, window, softmax_scale):
    gradients = reference.backward(q, k, v, o, do, cu_seqlens, window, softmax_scale)
    return tuple(g.to(q.dtype) for g in gradients)
