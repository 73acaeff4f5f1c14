# The look-up with 2-3 entries per dictionary (the paper: 2-6) on one CPU core: xVal, 2 x 128, a checkpoint
# kept every 2,000 steps for the learning curve (dev/results/lookup_cpu/README.md). The rest as dev/config/lookup_cpu.py.
#   python prepare/lookup.py --size paper --entries 2,3 --out data/lookup_e23
#   python tokenize_numbers.py data/lookup_e23 --encoding xval
#   OMP_NUM_THREADS=1 python train.py dev/config/lookup_cpu_e23.py
#   python tools/curves.py --runs=out/lookup_cpu_e23/xval --quantity=answer --max_samples=3000 --out=dev/results/lookup_cpu/curves_e23
out_dir = "out/lookup_cpu_e23/xval"
data_dir = "data/lookup_e23"
encoding = "xval"
n_layer = 2
n_head = 4
n_embd = 128
block_size = 32  # 3 entries and the answer are 28 tokens in P10
mlm_probability = 0.3
max_iters = 30000
learning_rate = 0.001  # as dev/config/lookup_cpu.py
min_lr = 0.0001
warmup_iters = 100
eval_interval = 2000
keep_every = 2000
eval_batches = 10
log_interval = 250
