# ERA5 2 m temperature (paper §3.1, App. C, table 7), P1000 encoding, at the paper's scale: 6
# blocks, 6 heads of width 128 (d = 768), 500k steps of 64 samples
# (docs/decisions.md#hyperparameters).
#   python prepare/era5.py era5_t2m_2020.nc --size paper --out data/era5
#   python tokenize_numbers.py data/era5 --encoding p1000
#   torchrun --nproc_per_node=4 train.py config/era5_p1000.py
# Unset here, train.py's defaults are the paper's: 6 layers × 6 heads × 768, batches of 64, 500k
# steps, 2,000 warm-up steps, weight decay 0.1.
out_dir = "out/era5_p1000"
data_dir = "data/era5"
encoding = "p1000"
# the paper's max context (table 7; B1999 3404, not the table's 1251); our longest sample is 4
# tokens shorter
block_size = 5010
micro_batch_size = 16  # per GPU: 4 GPUs × 16 = 64, one GPU accumulates 4 micro-batches
learning_rate = 0.0001
min_lr = 1e-05  # 0.1 × learning_rate, reached at the last step
eval_interval = 5000
eval_batches = 50
log_interval = 100
