# Planets on one CPU core: the small data set, xVal, a 2 x 64 model, a checkpoint kept every 1,500 steps for
# the learning curve (dev/results/planets_cpu/README.md). Stopped early, it continues with --resume.
#   python prepare/planets.py --size small --out data/planets
#   python tokenize_numbers.py data/planets --encoding xval
#   OMP_NUM_THREADS=1 python train.py dev/config/planets_cpu.py
#   python tools/curves.py --runs=out/planets_cpu/xval --quantity=a0 --max_samples=300 --out=dev/results/planets_cpu/curves_a0
out_dir = "out/planets_cpu/xval"
data_dir = "data/planets"
encoding = "xval"
n_layer = 2
n_head = 2
n_embd = 64
block_size = 2713  # the longest P10 sample
batch_size = 8
micro_batch_size = 8
max_iters = 9000
learning_rate = 0.001
min_lr = 0.0001
warmup_iters = 100
eval_interval = 1500
keep_every = 1500
eval_batches = 10
seed = 1
