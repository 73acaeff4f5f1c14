# The look-up task on one CPU core: the paper's task and data size (prepare/lookup.py --size paper:
# 1M training samples, 2-6 entries, MLM p = 0.3, the paper's losses), a 2-layer model of width 128,
# lr 1e-3 (best of 1e-3, 3e-3, 1e-2 on 1,500-step runs of the small data set). It does not learn
# the look-up at this scale: after 10,000 steps (and a 4-layer model after 14,000) the answer MSE is
# 0.74 x the answers' variance, that of predicting the mean of the dictionary's values
# (results/lookup_cpu/README.md). A checkpoint is kept every 1,000 steps for the learning curve.
#   python prepare/lookup.py --size paper --out data/lookup_paper
#   python tokenize_numbers.py data/lookup_paper --encoding xval
#   OMP_NUM_THREADS=1 python train.py config/lookup_cpu.py --out_dir=out/lookup_cpu/xval
#   python curves.py --runs=out/lookup_cpu/xval --quantity=answer --max_samples=3000 --out=results/lookup_cpu/curves
# Stopped early, it continues with --resume.
out_dir = "out/lookup_cpu"
data_dir = "data/lookup_paper"
encoding = "xval"
n_layer = 2
n_head = 4
n_embd = 128
block_size = 64  # 6 entries and the answer are 56 tokens in P10
mlm_probability = 0.3
batch_size = 64
micro_batch_size = 64
max_iters = 20000  # ~110 ms a step on one core: the first 10,000 steps take about 19 minutes
learning_rate = 0.001  # 3e-3 learned more slowly, 1e-2 predicted a constant (1,500-step sweep)
min_lr = 0.0001
warmup_iters = 100
eval_interval = 1000
keep_every = 1000
eval_batches = 10
log_interval = 250
