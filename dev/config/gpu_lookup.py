# The look-up with the paper's 2-6 entries on one H100, for xVal, P10 and FP15 alike
# (dev/gpu_claims.py trains and evaluates all three and writes its tables to dev/results/gpu/).
# CPU-sized models stay on the dictionary-mean plateau (dev/results/lookup_cpu/README.md): this recipe changes the
# scale, not the method.
#   python prepare/lookup.py --size paper --entries 2,6 --out out/gpu/data/lookup
#   python tokenize_numbers.py out/gpu/data/lookup --encoding xval
#   python train.py dev/config/gpu_lookup.py --encoding=xval --out_dir=out/gpu/lookup_xval
out_dir = "out/gpu/lookup_xval"
data_dir = "out/gpu/data/lookup"
encoding = "xval"
block_size = 64  # 6 entries and the answer are 56 tokens in P10
mlm_probability = 0.3  # the paper's look-up masking
batch_size = 128  # twice the paper's 64: 2.5k-5k tokens a step leave the H100 idle either way, so more samples per step come nearly free
micro_batch_size = 128
max_iters = 15000  # ~10 ms a step (xVal; P10 ~14): the 6 × 768 step of results/gpu_check.md is 106 ms for 80k tokens, here 2.5k-5k tokens plus ~5 ms of launches -> ~2.5-3.5 min
learning_rate = 0.0003  # 1e-3 was best for 2 x 128 on the CPU; a 6x wider model takes a smaller step (GPT-2 small trains at 6e-4), 15k steps need more than the paper's 2e-4 over 500k
min_lr = 3e-05  # 0.1 × learning_rate, as in the paper's schedules
warmup_iters = 500  # 3% of the run
eval_interval = 2500  # a checkpoint (~0.5 GB, FP15 ~0.8) every ~25 s: what a stop at the time budget can lose
log_interval = 250
compile = False  # launch-bound steps gain ~5 ms from compile, which costs about a minute at every (re)start of a ~3-minute run
seed = 1
