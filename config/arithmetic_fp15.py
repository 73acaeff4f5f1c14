# arithmetic (paper App. A); pick the variant with --data_dir, FP15 encoding, at the paper's scale:
# 6 blocks, 6 heads of width 128 (d = 768), 500k steps of 64 samples
# (docs/decisions.md#hyperparameters).
#   python prepare/arithmetic.py --variant ops2 --size paper
#   python tokenize_numbers.py data/arithmetic_ops2 --encoding fp15
#   torchrun --nproc_per_node=4 train.py config/arithmetic_fp15.py
# Unset here, train.py's defaults are the paper's: 6 layers × 6 heads × 768, batches of 64, 500k
# steps, 2,000 warm-up steps, weight decay 0.1.
out_dir = "out/arithmetic_fp15"
data_dir = "data/arithmetic_ops2"
encoding = "fp15"
block_size = 32  # the longest variant (4 operands) is 30 tokens in P10
micro_batch_size = 16  # per GPU: 4 GPUs × 16 = 64, one GPU accumulates 4 micro-batches
learning_rate = 0.0001  # the paper gives no learning rates for arithmetic: the temperature ones
min_lr = 1e-05  # 0.1 × learning_rate, reached at the last step
eval_interval = 5000
eval_batches = 50
log_interval = 100
