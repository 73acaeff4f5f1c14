# number look-up (paper App. C), P1000 encoding, at the paper's scale: 6 blocks, 6 heads of width
# 128 (d = 768), 500k steps of 64 samples (docs/decisions.md#hyperparameters).
#   python prepare/lookup.py --size paper
#   python tokenize_numbers.py data/lookup --encoding p1000
#   torchrun --nproc_per_node=4 train.py config/lookup_p1000.py
# Unset here, train.py's defaults are the paper's: 6 layers × 6 heads × 768, batches of 64, 500k
# steps, 2,000 warm-up steps, weight decay 0.1.
out_dir = "out/lookup_p1000"
data_dir = "data/lookup"
encoding = "p1000"
block_size = 64  # 6 entries and the answer are 56 tokens in P10
mlm_probability = 0.3
micro_batch_size = 16  # per GPU: 4 GPUs × 16 = 64, one GPU accumulates 4 micro-batches
learning_rate = 0.0001  # the paper gives no learning rates for look-up: the temperature ones
min_lr = 1e-05  # 0.1 × learning_rate, reached at the last step
eval_interval = 5000
eval_batches = 50
log_interval = 100
