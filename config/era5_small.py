# A small era5 model for a CPU, minutes, in any encoding (block_size fits P10).
#   python prepare/era5.py FILE.nc --size small --out data/era5
#   python tokenize_numbers.py data/era5 --encoding xval
#   python train.py config/era5_small.py
#   python train.py config/era5_small.py --encoding=p10
out_dir = "out/era5_small"
data_dir = "data/era5"
encoding = "xval"
n_layer = 2
n_head = 2
n_embd = 64
block_size = 8222
batch_size = 8  # ~1200 tokens per xVal sample: a small model and batch keep a step near a second
micro_batch_size = 8
max_iters = 300  # a few minutes on a laptop CPU
learning_rate = 0.001
min_lr = 0.0001
warmup_iters = 50
eval_interval = 100
eval_batches = 10
