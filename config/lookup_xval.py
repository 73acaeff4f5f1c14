# number look-up (paper App. C), xVal encoding, at the paper's scale:
# 6 blocks, 6 heads of width 128 (d = 768), 500k steps of 64 samples (docs/decisions.md#hyperparameters).
#   python prepare/lookup.py --size paper
#   python tokenize_numbers.py data/lookup --encoding xval
#   torchrun --nproc_per_node=4 train.py config/lookup_xval.py
out_dir = "out/lookup_xval"
data_dir = "data/lookup"
encoding = "xval"  # multi-scale xVal: add --k=3
n_layer = 6
n_head = 6
n_embd = 768
block_size = 64  # 6 entries and the answer are 56 tokens in P10
mlm_probability = 0.3
batch_size = 64
micro_batch_size = 16  # per GPU: 4 GPUs × 16 = 64, one GPU accumulates 4 micro-batches
max_iters = 500_000
learning_rate = 0.0002  # the paper gives no learning rates for look-up: the temperature ones
min_lr = 2e-05  # 0.1 × learning_rate, reached at the last step
warmup_iters = 2000
weight_decay = 0.1
eval_interval = 5000
eval_batches = 50
log_interval = 100
