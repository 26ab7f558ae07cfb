r"""Cross-View Training (dissertation ch. 4) with a CNN-BiLSTM, for semi-supervised sequence
tagging, dependency parsing and translation, and its baselines (supervised only, word dropout).

  run_cvt --tasks=chunk,ner,pos,dep --data_dir=../shared/data \
      --unlabeled_data='../shared/data/wiki/wiki_*.txt' --model_dir=/runs/cvt
  run_cvt --tasks=translate --data_dir=../shared/data/translation/multi30k \
      --unlabeled_data='../shared/data/translation/multi30k/train.[1-5].en' --model_dir=/runs/mt
  cvt_translate --model_dir=/runs/mt --input_file=news.en --output_file=news.de

--data_dir holds the tasks' folders (pos_ptb/, chunk_conll2000/, ner_conll2003/ or tagging/<them>,
read as run_tagging reads them; parsing/ud_ewt/ for dep; translation/multi30k/ for translate) or,
for one task, its files (dep: one *-ud-train.conllu and one *-ud-dev.conllu; translate: train.en,
train.de, val.en, val.de). Several tasks: multi-task CVT, one shared encoder. --unlabeled_data is a
corpus in our format (a paragraph per line, blank lines between documents; sentences are split on
the fly) or, for translate, raw source sentences one per line. Writes
`<model_dir>/eval_results.json` (each task's dev token accuracy, span F1, UAS/LAS with MST
decoding or BLEU; EMA weights of the best evaluation; median over trials),
`trial_<k>/predictions_<task>.txt` (conlleval input), `predictions_dep.conllu` or
`predictions_translate.de` (detokenized), and `trial_<k>/model` (those weights). Re-running resumes
a trial from its last checkpoint.
"""
from absl import logging  # pylint: disable=g-bad-import-order

from official_rtd.tools import cli
from official_rtd.cvt import settings  # pylint: disable=g-bad-import-order

COMMAND_LINE = cli.Flags(settings.CvtRunConfig, {
    "tasks": "Comma list of pos, chunk, ner, dep (dependency parsing), translate (English to "
             "German; alone); several: multi-task CVT, one shared encoder.",
    "data_dir": "Root with the tasks' folders (tagging ones, parsing/ud_ewt, translation/multi30k) "
                "or one task's folder.",
    "model_dir": "Where checkpoints, results and predictions go.",
    "unlabeled_data": "Comma list of corpus files/globs (needed unless --mode=supervised or "
                      "--unlabeled_remainder).",
    "unlabeled_remainder": "Also read, as unlabeled text, each task's training sentences that "
                           "--train_fraction / --max_train_sentences leave out (labels removed): "
                           "in-domain unlabeled data; alone or alternating with --unlabeled_data.",
    "mode": "cvt: auxiliary modules learn the primary's predictions on unlabeled data; "
            "word_dropout: the primary learns its own predictions with 10% of words REMOVED; "
            "supervised: labeled data only.",
    "word_embeddings": "GloVe-format text file (word v1 ... vd) to initialise word embeddings; "
                       "unset: random.",
    "init_from_encoder": "An encoder export: initialise each word with the mean of its word "
                         "pieces' embeddings (embedding size must be --word_dim).",
    "word_dim": "Word embedding size; the char CNN has as many filters over widths 2, 3, 4.",
    "char_dim": "Character embedding size.",
    "lstm1_size": "First Bi-LSTM's hidden size (per direction).",
    "lstm2_size": "Second Bi-LSTM's hidden size (per direction).",
    "projection_size": "LSTM projection size.",
    "hidden_size": "Prediction modules' hidden layer (dep: the edge scorers' projections).",
    "train_steps": "Labeled steps (each followed by an unlabeled step unless supervised); "
                   "raised on a finished run, its trials that ended at this budget continue.",
    "train_batch_size": "Sentences per minibatch (labeled and unlabeled).",
    "max_sentence_length": "Longest unlabeled sentence kept, in words (labeled sentences are "
                           "never dropped).",
    "on_decode_error": "A line of --unlabeled_data that is not UTF-8: fail (naming file:line) "
                       "or skip (with a warning).",
    "on_bad_pair": "translate: a pair of train.*/val.* lines with a blank side: fail (naming "
                   "file:line) or skip (left out and counted; dev predictions keep one line "
                   "per line of val.en).",
    "max_train_sentences": "Use at most this many of each task's training sentences, a seeded "
                           "random subset (0: all).",
    "train_fraction": "Use this fraction of each task's training sentences, a seeded random "
                      "subset (1.0: all).",
    "vocab_unlabeled_sentences": "Unlabeled sentences read to extend the word and character "
                                 "vocabulary beyond the labeled text (0: labeled text only).",
    "vocab_min_count": "A word or character of those unlabeled sentences joins the vocabulary "
                       "when seen this often.",
    "target_min_count": "translate: target words seen fewer times in training are UNK when "
                        "training (the paper: 6, i.e. 5 or fewer become UNK).",
    "beam_size": "translate: beam size of decoding and of the teacher on unlabeled sentences "
                 "(the paper: 10).",
    "max_decode_length": "translate: longest translation, in words.",
    "attention_dropout": "translate: fraction of the attention weights zeroed in the attention-"
                         "dropout auxiliary decoder.",
    "auxiliary_decoders": "translate: the auxiliary decoders that learn the teacher's "
                          "translations of unlabeled sentences (comma list of attention_dropout, "
                          "future; all of them are built either way).",
    "learning_rate": "Base SGD learning rate: lr/(1 + 0.005*sqrt(t)).",
    "warmup_steps": "Linear warm-up of the learning rate (cvt_text used 5000; the paper none).",
    "unlabeled_start_step": "Unlabeled steps begin after this many labeled steps (0: from the "
                            "first), so the teacher is trained before the students learn from it.",
    "unlabeled_loss_weight": "w in L = L_sup + w*L_CVT: scales each unlabeled step's gradient (the "
                             "paper: 1).",
    "ema_decay": "Exponential moving average of the weights used for evaluation and export.",
    "eval_every_steps": "Dev evaluation interval (0: at the end only); the best evaluation's "
                        "weights and predictions are kept.",
    "patience": "Stop a trial after this many evaluations without a better dev figure (0: "
                "never).",
    "save_checkpoints_steps": "Checkpoint interval (a killed run resumes there).",
    "log_every_steps": "Progress line interval.",
    "num_trials": "Runs with seeds seed..seed+N-1; medians in eval_results.json.",
    "seed": "First trial's seed.",
}, enums={"mode": list(settings.MODES), "on_decode_error": ["fail", "skip"],
           "on_bad_pair": ["fail", "skip"]}, ranges=settings.RUN_CONFIG_RANGES,
    required=("tasks", "data_dir", "model_dir"), renamed={"batch_size": "train_batch_size"})


def main(config):
  from official_rtd.cvt import runner  # pylint: disable=g-import-not-at-top
  summary = runner.CvtRunner(config, log=logging.info).run()
  logging.info("median dev results: %s (written to %s/eval_results.json)", summary["median"],
               config.model_dir)


def run():
  cli.run_main(main, "run_cvt", COMMAND_LINE)


if __name__ == "__main__":
  run()
