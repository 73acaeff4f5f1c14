# The look-up recipe tried on one CPU core (about 35 minutes; results/README.md says what it
# reaches): the paper's task and sizes (2-6 entries, MLM p = 0.3, the paper's losses), a
# 2-layer model of width 128, the learning rate chosen by a sweep of 1e-3, 3e-3 and 1e-2 on
# 1,500-step runs. A checkpoint is kept every 1,000 steps for the learning curve.
#   python prepare/lookup.py --size paper --out data/lookup_paper     # 1M train samples: none seen twice
#   python tokenize_numbers.py data/lookup_paper --encoding xval
#   OMP_NUM_THREADS=1 python train.py config/lookup_cpu.py                  # --encoding=p10 likewise
#   python curves.py --runs=out/lookup_cpu --quantity=answer --out=results/lookup_cpu/curves
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
max_iters = 15000
learning_rate = 0.001  # 3e-3 learned more slowly, 1e-2 predicted a constant (1,500-step sweep)
min_lr = 0.0001
warmup_iters = 100
eval_interval = 1000
keep_every = 1000
eval_batches = 10
log_interval = 250
