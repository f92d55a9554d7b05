# A character-level run on a small text, in the manner of nanoGPT's shakespeare_char config
# with its README's CPU flags (no compile, CPU, short context, a tiny model).
out_dir = "out-char"
eval_interval = 10
eval_iters = 4
log_interval = 1
always_save_checkpoint = False

dataset = "char"
gradient_accumulation_steps = 1
batch_size = 8
block_size = 32

n_layer = 2
n_head = 2
n_embd = 32
dropout = 0.0

learning_rate = 1e-3
max_iters = 20
lr_decay_iters = 20
min_lr = 1e-4
beta2 = 0.99
warmup_iters = 5

device = "cpu"
compile = False
