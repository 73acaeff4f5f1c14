# A small planets model for a CPU, minutes, in any encoding (block_size fits P10).
#   python prepare/planets.py --size small
#   python tokenize_numbers.py data/planets --encoding xval
#   python train.py config/planets_small.py
#   python train.py config/planets_small.py --encoding=p10
out_dir = "out/planets_small"
data_dir = "data/planets"
encoding = "xval"
n_layer = 4
n_head = 4
n_embd = 128
block_size = 2713
batch_size = 16  # ~440 tokens per xVal sample
micro_batch_size = 16
max_iters = 250  # a few minutes on a laptop CPU
learning_rate = 0.001
min_lr = 0.0001
warmup_iters = 50
eval_interval = 125
eval_batches = 10
