# The look-up on one CPU core at the paper's task and data size (1M samples, 2-6 entries, MLM p = 0.3):
# a 2 x 128 model, a checkpoint kept every 1,000 steps for the learning curve (dev/results/lookup_cpu/README.md).
#   python prepare/lookup.py --size paper --out data/lookup_paper
#   python tokenize_numbers.py data/lookup_paper --encoding xval
#   OMP_NUM_THREADS=1 python train.py dev/config/lookup_cpu.py --out_dir=out/lookup_cpu/xval
#   python tools/curves.py --runs=out/lookup_cpu/xval --quantity=answer --max_samples=3000 --out=dev/results/lookup_cpu/curves
out_dir = "out/lookup_cpu"
data_dir = "data/lookup_paper"
encoding = "xval"
n_layer = 2
n_head = 4
n_embd = 128
block_size = 64  # 6 entries and the answer are 56 tokens in P10
mlm_probability = 0.3
max_iters = 20000
learning_rate = 0.001  # the best of 1e-3, 3e-3, 1e-2 on short runs of the small set
min_lr = 0.0001
warmup_iters = 100
keep_every = 1000
eval_batches = 10
log_interval = 250
