# Your own data (prepare/text.py) on a laptop CPU in minutes: a small xVal model, block_size taken
# from the data.
#   python prepare/text.py mydata.csv --out data/mydata
#   python tokenize_numbers.py data/mydata --encoding xval
#   python train.py config/own_small.py --data_dir=data/mydata --out_dir=out/mydata
#   python sample.py --ckpt=out/mydata/ckpt_best.pt --input=data/mydata/test.txt --mask_key=KEY
out_dir = "out/own_small"  # one run per folder: give each dataset its own --out_dir
data_dir = "data/mydata"
encoding = "xval"
n_layer = 4
n_head = 4
n_embd = 128
batch_size = 32
micro_batch_size = 32
max_iters = 1000  # the validation loss levels off by about step 500 on a few thousand records
learning_rate = 1e-3  # a small model on a short run takes a larger step than the paper's 2e-4
min_lr = 1e-4
warmup_iters = 100
eval_interval = 200
eval_batches = 10
log_interval = 50
