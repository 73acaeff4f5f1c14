# A small model of the multi-operand trees (ops2, ops3, ops4) for a CPU; any encoding.
#   python prepare/arithmetic.py --variant ops2 --size small
#   python tokenize_numbers.py data/arithmetic_ops2 --encoding all
#   python train.py dev/config/arithmetic_ops_small.py --encoding=p10
# The trees are written unscaled (numbers from 1e-2 to 1e8), so xVal uses the paper's multi-scale
# embedding: k = 4 gives 9 number embeddings at scales 1e-4..1e4 and the normalised MSE loss.
# Text encodings ignore k.
out_dir = "out/arithmetic_ops_small"
data_dir = "data/arithmetic_ops2"
encoding = "xval"
k = 4
n_layer = 4
n_head = 4
n_embd = 128
block_size = 48  # four operands and the answer in P10: up to 40 tokens
batch_size = 128
micro_batch_size = 128
max_iters = 5000
learning_rate = 0.002
min_lr = 0.0002
warmup_iters = 250
eval_batches = 10
log_interval = 100
