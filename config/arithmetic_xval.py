# arithmetic (paper App. A); pick the variant with --data_dir, xVal encoding, at the paper's scale:
# 6 blocks, 6 heads of width 128 (d = 768), 500k steps of 64 samples (docs/decisions.md#hyperparameters).
#   python prepare/arithmetic.py --variant ops2 --size paper
#   python tokenize_numbers.py data/arithmetic_ops2 --encoding xval
#   torchrun --nproc_per_node=4 train.py config/arithmetic_xval.py
out_dir = "out/arithmetic_xval"
data_dir = "data/arithmetic_ops2"
encoding = "xval"
k = 4  # the trees are unscaled (numbers up to 1e8): multi-scale xVal; --k=0 for the mult variants (order 1)
n_layer = 6
n_head = 6
n_embd = 768
block_size = 32  # the longest variant (4 operands) is 30 tokens in P10
mlm_probability = 0.2
batch_size = 64
micro_batch_size = 16  # per GPU: 4 GPUs × 16 = 64, one GPU accumulates 4 micro-batches
max_iters = 500_000
learning_rate = 0.0002  # the paper gives no learning rates for arithmetic: the temperature ones
min_lr = 2e-05  # 0.1 × learning_rate, reached at the last step
warmup_iters = 2000
weight_decay = 0.1
eval_interval = 5000
eval_batches = 50
log_interval = 100
