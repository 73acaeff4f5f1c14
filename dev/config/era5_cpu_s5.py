# Temperature with 5-9 stations per sample (the paper: 60-89) on one CPU core: xVal, 4 x 128, a checkpoint
# kept every 1,000 steps for the learning curve (dev/results/era5_cpu/README.md). The rest as dev/config/era5_cpu.py.
#   python prepare/era5_synthetic.py --out data/era5_synthetic
#   python prepare/era5.py data/era5_synthetic/t2m.nc --land-sea-mask data/era5_synthetic/lsm.nc --stations 5,9 --size small --out data/era5_s5
#   python tokenize_numbers.py data/era5_s5 --encoding xval
#   OMP_NUM_THREADS=1 python train.py dev/config/era5_cpu_s5.py
#   python tools/curves.py --runs=out/era5_cpu_s5/xval --quantity=t+1 --max_samples=300 --out=dev/results/era5_cpu/curves_s5
out_dir = "out/era5_cpu_s5/xval"
data_dir = "data/era5_s5"
encoding = "xval"
n_layer = 4
n_head = 4
n_embd = 128
block_size = 256  # the longest sample is 194 tokens in xVal
batch_size = 8
micro_batch_size = 8
max_iters = 16000
learning_rate = 0.001
min_lr = 0.0001
warmup_iters = 100
keep_every = 1000
eval_batches = 10
seed = 1
