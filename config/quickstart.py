# The built-in default: a small xVal model on 2-operand arithmetic, a few CPU-minutes.
#   python prepare/arithmetic.py --variant ops2 --size small
#   python tokenize_numbers.py data/arithmetic_ops2 --encoding xval
#   python train.py config/quickstart.py
out_dir = "out/quickstart"
data_dir = "data/arithmetic_ops2"
encoding = "xval"
n_layer = 4
n_head = 4
n_embd = 128
block_size = 16  # ((a op b))=c is 7 tokens in xVal
mlm_probability = 0.2
batch_size = 64
micro_batch_size = 64
max_iters = 1500
learning_rate = 1e-3  # a small model on a short run takes a larger step than the paper's 2e-4
min_lr = 1e-4
warmup_iters = 100
eval_interval = 250
eval_batches = 20
log_interval = 50
