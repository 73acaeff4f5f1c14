# Planets on one H100 for xVal and B1999 alike: dev/config/planets_cpu.py's recipe (small data set,
# MLM p = 0.2, lr 1e-3 -> 1e-4) scaled up in model, batch and steps (dev/gpu_claims.py trains
# and evaluates both, writing its tables to dev/results/gpu/).
#   python prepare/planets.py --size small --out out/gpu/data/planets
#   python tokenize_numbers.py out/gpu/data/planets --encoding b1999
#   python train.py dev/config/gpu_planets.py --encoding=b1999 --out_dir=out/gpu/planets_b1999
out_dir = "out/gpu/planets_xval"
data_dir = "out/gpu/data/planets"
encoding = "xval"
n_layer = 4  # twice the CPU recipe's depth: a0 needs x² + y² of numbers at other positions, or a case split on the axes, built in the MLPs
n_head = 4
n_embd = 256  # 4x the CPU recipe's width: 3.6M parameters (B1999 3.9M), still launch- and attention-bound at ~47k tokens a step
block_size = 1258  # the longest B1999 sample of the small set (xVal's: 773)
max_iters = 8000  # ~15-20 ms a B1999 step of 47k tokens (results/gpu_check.md: 725k tokens/s at 6 × 768; 13x fewer FLOPs a token here) -> ~2-3 min; 512k samples, 7x the CPU recipe's
learning_rate = 0.001  # the CPU recipe's, under which Δt fell steadily; a 4 x 256 model still trains at it
min_lr = 0.0001
warmup_iters = 200
eval_batches = 10
log_interval = 100
seed = 1
