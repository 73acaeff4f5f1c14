# arithmetic (paper App. A); pick the variant with --data_dir, xVal encoding, at the paper's scale:
# 6 blocks, 6 heads of width 128 (d = 768), 500k steps of 64 samples
# (docs/decisions.md#hyperparameters).
#   python prepare/arithmetic.py --variant ops2 --size paper
#   python tokenize_numbers.py data/arithmetic_ops2 --encoding xval
#   torchrun --nproc_per_node=4 train.py config/arithmetic_xval.py
# Unset here, train.py's defaults are the paper's: 6 layers × 6 heads × 768, batches of 64, 500k
# steps, 2,000 warm-up steps, weight decay 0.1.
out_dir = "out/arithmetic_xval"
data_dir = "data/arithmetic_ops2"
encoding = "xval"
# the trees are unscaled (numbers up to 1e8): multi-scale xVal; --k=0 for the mult variants (order
# 1)
k = 4
block_size = 32  # the longest variant (4 operands) is 30 tokens in P10
micro_batch_size = 16  # per GPU: 4 GPUs × 16 = 64, one GPU accumulates 4 micro-batches
eval_interval = 5000
eval_batches = 50
log_interval = 100
