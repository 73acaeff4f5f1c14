# The look-up with one entry per dictionary ({d:1.53}d=1.53: the answer copies the only value) on one CPU
# core, for the out-of-distribution test (dev/results/lookup_e1/README.md): 2 x 128, a checkpoint kept every
# 500 steps. The same model and settings for every encoding.
#   python prepare/lookup.py --size paper --entries 1,1 --out data/lookup_e1
#   python tokenize_numbers.py data/lookup_e1 --encoding xval
#   OMP_NUM_THREADS=1 python train.py dev/config/lookup_cpu_e1.py
#   bash dev/lookup_e1.sh    # five encodings, three seeds each, then the tables
out_dir = "out/lookup_e1/xval_s1"
data_dir = "data/lookup_e1"
encoding = "xval"
n_layer = 2
n_head = 4
n_embd = 128
block_size = 16  # one entry and the answer are 16 tokens in P10
mlm_probability = 0.3
max_iters = 3000
learning_rate = 0.001
min_lr = 0.0001
warmup_iters = 100
eval_interval = 500
keep_every = 500
eval_batches = 10
log_interval = 250
seed = 1
