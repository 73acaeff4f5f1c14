# The built-in default: a small xVal model of 3-digit multiplication (0.123*0.456=0.056088), a few
# CPU-minutes.
#   python prepare/arithmetic.py --variant mult3 --size small
#   python tokenize_numbers.py data/arithmetic_mult3 --encoding xval
#   python train.py config/quickstart.py
#   python sample.py --ckpt=out/quickstart/ckpt_best.pt \
#       --input=data/arithmetic_mult3/test.txt --mask_last
out_dir = "out/quickstart"
data_dir = "data/arithmetic_mult3"
encoding = "xval"
n_layer = 4
n_head = 4
n_embd = 128
block_size = 16  # a*b=c is 5 tokens in xVal
batch_size = 128  # samples are 5 tokens long: a larger batch costs little and steadies the MSE
micro_batch_size = 128
max_iters = 5000
learning_rate = 2e-3  # a small model on a short run takes a larger step than the paper's 2e-4
min_lr = 1e-4
warmup_iters = 200
log_interval = 250
