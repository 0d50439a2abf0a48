r"""Batch attack by file name: the `id` of a results.jsonl line is the raw file name.

Every string of a report goes through formats/safe.py printable() (to_json ends with
printable_data), and the CSV and the progress lines print the id through csv_cell/printable, but
batch.result_line (grader/batch.py) puts `"id": submission.id` in front of to_json's object
unescaped. A student who chooses the file name (an upload) gets terminal control sequences and a
lone surrogate (a name that is not UTF-8) into the staff's results file: `jq -r .id` writes ESC ]0;
... BEL (retitles the terminal) and ESC [2J (clears it), and a consumer that encodes the id as UTF-8
(a gradebook export) raises UnicodeEncodeError on "\udcff". This file is an honest solution; the
attack is its name. Reproduce:

    mkdir /tmp/rt4 && cp THIS_FILE "/tmp/rt4/$(printf '\e]0;owned\a\e[2J=HYPERLINK(1)\xff').py"
    MLM_GRADER_SEED=s python -m grader batch /tmp/rt4 --out /tmp/rt4.jsonl --csv /tmp/rt4.csv
    jq -r .id /tmp/rt4.jsonl | cat -v     # ^[]0;owned^G^[[2J=HYPERLINK(1)\udcff (raw)

Today: the CSV cell and the summary show it escaped (\x1b]0;owned\x07...), results.jsonl holds
"\u001b]0;owned\u0007\u001b[2J=HYPERLINK(1)\udcff". Should: the id printable as every other field
(or kept raw in a separate, documented field).
"""

import math

import torch


def layer_norm(x):
    mean = x.mean(dim=-1, keepdim=True)
    var = ((x - mean) ** 2).mean(dim=-1, keepdim=True)
    return (x - mean) / torch.sqrt(var + 1e-5)


def gelu(x):
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x**3)))


def softmax(scores):
    scores = scores - scores.amax(dim=-1, keepdim=True)
    e = torch.exp(scores)
    return e / e.sum(dim=-1, keepdim=True)


def attention(x, w_q, w_k, w_v, w_o, num_heads):
    n, t, d = x.shape
    d_head = d // num_heads
    q = (x @ w_q).view(n, t, num_heads, d_head).transpose(1, 2)
    k = (x @ w_k).view(n, t, num_heads, d_head).transpose(1, 2)
    v = (x @ w_v).view(n, t, num_heads, d_head).transpose(1, 2)
    scores = q @ k.transpose(-2, -1) / math.sqrt(d_head)
    out = softmax(scores) @ v
    return out.transpose(1, 2).reshape(n, t, d) @ w_o


def mlm_forward_tied(input_ids, w_emb, pos_embed, blocks_weights, mask_indicator, num_heads):
    x = w_emb[input_ids] + pos_embed
    for w_q, w_k, w_v, w_o, w_mlp1, w_mlp2 in blocks_weights:
        x = x + attention(layer_norm(x), w_q, w_k, w_v, w_o, num_heads)
        x = x + gelu(layer_norm(x) @ w_mlp1) @ w_mlp2
    hidden = x[mask_indicator > 0.5]
    return hidden @ w_emb.T
