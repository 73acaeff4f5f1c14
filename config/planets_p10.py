# REBOUND planetary orbits (paper §3.2, App. C, table 8), P10 encoding, at the paper's scale: 6
# blocks, 6 heads of width 128 (d = 768), 500k steps of 64 samples
# (docs/decisions.md#hyperparameters).
#   python prepare/planets.py --size paper --out data/planets
#   python tokenize_numbers.py data/planets --encoding p10
#   torchrun --nproc_per_node=4 train.py config/planets_p10.py
# Unset here, train.py's defaults are the paper's: 6 layers × 6 heads × 768, batches of 64, 500k
# steps, 2,000 warm-up steps, weight decay 0.1.
out_dir = "out/planets_p10"
data_dir = "data/planets"
encoding = "p10"
# our longest sample (4 planets, 59 steps); the paper's table 8 says 767/767/1251/1736/2707: our
# planet descriptions take 6 more structural tokens
block_size = 2713
micro_batch_size = 16  # per GPU: 4 GPUs × 16 = 64, one GPU accumulates 4 micro-batches
learning_rate = 0.0001
min_lr = 1e-05  # 0.1 × learning_rate, reached at the last step
eval_interval = 5000
eval_batches = 50
log_interval = 100
