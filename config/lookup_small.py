# A small lookup model for a CPU, minutes, in any encoding (block_size fits P10).
#   python prepare/lookup.py --size small
#   python tokenize_numbers.py data/lookup --encoding xval
#   python train.py config/lookup_small.py
#   python train.py config/lookup_small.py --encoding=p10
out_dir = "out/lookup_small"
data_dir = "data/lookup"
encoding = "xval"
n_layer = 4
n_head = 4
n_embd = 128
block_size = 64
mlm_probability = 0.3
max_iters = 3000  # a few minutes on a laptop CPU
learning_rate = 0.001
min_lr = 0.0001
warmup_iters = 150
eval_interval = 600
eval_batches = 10
log_interval = 60
