# A small arithmetic model for a CPU, minutes, in any encoding (block_size fits P10).
#   python prepare/arithmetic.py --variant mult3 --size small
#   python tokenize_numbers.py data/arithmetic_mult3 --encoding xval
#   python train.py config/arithmetic_small.py
#   python train.py config/arithmetic_small.py --encoding=p10
out_dir = "out/arithmetic_small"
data_dir = "data/arithmetic_mult3"
encoding = "xval"
n_layer = 4
n_head = 4
n_embd = 128
block_size = 32
batch_size = 128  # as config/quickstart.py, for any variant and encoding
micro_batch_size = 128
max_iters = 5000
learning_rate = 0.002
min_lr = 0.0002
warmup_iters = 250
eval_batches = 10
log_interval = 100
