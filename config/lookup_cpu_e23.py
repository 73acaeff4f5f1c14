# The look-up with 2-3 entries per dictionary (the paper's data has 2-6) on one CPU core: xVal,
# 2 x 128, lr 1e-3, 30,000 steps of 64 samples, a checkpoint kept every 2,000 steps for the
# learning curve. The rest as config/lookup_cpu.py. It stays on the plateau of predicting the
# dictionary's mean (answer MSE 0.60 x variance at step 30,000; results/lookup_cpu/README.md).
#   python prepare/lookup.py --size paper --entries 2,3 --out data/lookup_e23
#   python tokenize_numbers.py data/lookup_e23 --encoding xval
#   OMP_NUM_THREADS=1 python train.py config/lookup_cpu_e23.py
#   python curves.py --runs=out/lookup_cpu_e23/xval --quantity=answer --max_samples=3000 --out=results/lookup_cpu/curves_e23
# Stopped early, it continues with --resume.
out_dir = "out/lookup_cpu_e23/xval"
data_dir = "data/lookup_e23"
encoding = "xval"
n_layer = 2
n_head = 4
n_embd = 128
block_size = 32  # 3 entries and the answer are 28 tokens in P10
mlm_probability = 0.3
batch_size = 64
micro_batch_size = 64
max_iters = 30000  # 70 ms a step on a free core: about 35 minutes
learning_rate = 0.001  # 3e-3 learned more slowly, 1e-2 predicted a constant (1,500-step sweep)
min_lr = 0.0001
warmup_iters = 100
eval_interval = 2000
keep_every = 2000
eval_batches = 10
log_interval = 250
