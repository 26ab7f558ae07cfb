r"""First contact, walked as a new user would (issue 62): realistic mistakes across the tools,
each run as typed, with its exit code, its last line and whether it left anything behind.

  python benchmarks/first_contact.py --work_dir=/tmp/first_contact [--cases=vocab_,cpd_]

A quickstart run (`rtd_quickstart`, a few steps) makes the vocabulary, records, pre-training run
and export the cases start from; every case then runs in its own process (`--timeout` each). The
table printed (markdown) is the record to judge: a case is CLEAR when its last line says what is
wrong and names the flag, file or parameter to change; UNCLEAR when the user cannot tell what to
do; WRONG when a mistake is accepted silently or leaves debris (a path the case names in `leaves`
that exists after a failed run). The verdicts are the reader's; this script only runs and
records. Results in benchmarks/results/reliability.md.
"""
import os
import shlex
import shutil
import subprocess
import sys

from absl import app
from absl import flags

import common

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED = os.path.join(REPO, "..", "shared", "data")
flags.DEFINE_string("work_dir", None, "Scratch directory (the quickstart run and every case's "
                    "outputs).")
flags.DEFINE_list("cases", [], "Only the cases whose name starts with one of these.")
flags.DEFINE_integer("timeout", 600, "Seconds per case.")
FLAGS = flags.FLAGS


def cases(w):
  """`(name, mistake, argv, leaves)`: `leaves` the path that must not exist after a failure."""
  corpus = os.path.join(REPO, "data", "corpus_sample", "gutenberg_sample.txt")
  qs = os.path.join(w, "qs")
  vocab, records = os.path.join(qs, "vocab.txt"), os.path.join(qs, "records")
  run, export = os.path.join(qs, "model"), os.path.join(qs, "model", "export")
  glue, tagging = os.path.join(SHARED, "glue"), os.path.join(SHARED, "tagging")
  ud, squad = os.path.join(SHARED, "parsing", "ud_ewt"), os.path.join(SHARED, "squad")
  race, m30k = os.path.join(SHARED, "race"), os.path.join(SHARED, "translation", "multi30k")
  out = lambda name: os.path.join(w, "out", name)
  text = os.path.join(w, "notes.txt")
  tiny = ["--gin_file=gin/models/tiny.gin", "--gin_file=gin/tasks/electra.gin"]
  ft = lambda tool, *a: [tool, f"--init_checkpoint={export}", *a]
  return [
      # build_vocab
      ("vocab_missing_input", "input glob matches nothing",
       ["build_vocab", f"--input_files={w}/nope/*.txt", f"--output_file={out('v1.txt')}"],
       out("v1.txt")),
      ("vocab_tiny_size", "vocab_size smaller than the special tokens",
       ["build_vocab", f"--input_files={corpus}", "--vocab_size=3",
        f"--output_file={out('v2.txt')}"], out("v2.txt")),
      ("vocab_output_is_dir", "output_file names a directory",
       ["build_vocab", f"--input_files={corpus}", "--vocab_size=500", f"--output_file={w}"], ""),
      ("vocab_bad_model_type", "a model type that does not exist",
       ["build_vocab", f"--input_files={corpus}", "--model_type=bpe",
        f"--output_file={out('v3.txt')}"], out("v3.txt")),
      ("vocab_binary_input", "a binary file as the corpus",
       ["build_vocab", f"--input_files={os.path.join(run, 'ckpt-*.data-*')}",
        f"--output_file={out('v4.txt')}"], out("v4.txt")),
      ("vocab_exists", "output file already there (a copy of the run's vocabulary)",
       ["build_vocab", f"--input_files={corpus}", "--vocab_size=500",
        f"--output_file={w}/existing/vocab.txt"], ""),
      # create_pretraining_data
      ("cpd_no_vocab", "vocab file path wrong",
       ["create_pretraining_data", f"--input_files={corpus}", f"--vocab_file={w}/vocab.txt",
        f"--output_dir={out('r1')}"], out("r1")),
      ("cpd_vocab_is_corpus", "the corpus given as the vocab",
       ["create_pretraining_data", f"--input_files={corpus}", f"--vocab_file={corpus}",
        f"--output_dir={out('r2')}"], out("r2")),
      ("cpd_seq_too_short", "max_seq_length 2",
       ["create_pretraining_data", f"--input_files={corpus}", f"--vocab_file={vocab}",
        "--max_seq_length=2", f"--output_dir={out('r3')}"], out("r3")),
      ("cpd_mask_prob", "mask_prob as a percentage",
       ["create_pretraining_data", f"--input_files={corpus}", f"--vocab_file={vocab}",
        "--mask_prob=15", f"--output_dir={out('r4')}"], out("r4")),
      ("cpd_output_exists", "output_dir holds other records (a copy of the run's)",
       ["create_pretraining_data", f"--input_files={corpus}", f"--vocab_file={vocab}",
        f"--output_dir={w}/existing/records"], ""),
      ("cpd_bad_packing", "a packing value that does not exist",
       ["create_pretraining_data", f"--input_files={corpus}", f"--vocab_file={vocab}",
        "--packing=documents", f"--output_dir={out('r5')}"], out("r5")),
      ("cpd_predictions_gt_seq", "more predictions than positions",
       ["create_pretraining_data", f"--input_files={corpus}", f"--vocab_file={vocab}",
        "--max_seq_length=16", "--max_predictions_per_seq=40", f"--output_dir={out('r6')}"],
       out("r6")),
      ("cpd_workers_zero", "num_workers 0",
       ["create_pretraining_data", f"--input_files={corpus}", f"--vocab_file={vocab}",
        "--num_workers=0", f"--output_dir={out('r7')}"], out("r7")),
      # run_pretraining
      ("pt_no_gin", "no gin file",
       ["run_pretraining", f"--input_records={records}", f"--model_dir={out('p1')}"],
       out("p1")),
      ("pt_gin_typo", "a gin file that does not exist",
       ["run_pretraining", "--gin_file=gin/models/tinny.gin", f"--input_records={records}",
        f"--model_dir={out('p2')}"], out("p2")),
      ("pt_param_typo", "a misspelled gin parameter",
       ["run_pretraining", *tiny, "--gin_param=TrainConfig.num_train_step = 2",
        f"--input_records={records}", f"--model_dir={out('p3')}"], out("p3")),
      ("pt_records_missing", "records path wrong",
       ["run_pretraining", *tiny, f"--input_records={w}/records",
        f"--model_dir={out('p4')}"], out("p4")),
      ("pt_records_seq", "records of another length than the gin file's",
       ["run_pretraining", *tiny, "--gin_param=TrainConfig.max_seq_length = 128",
        "--gin_param=TrainConfig.num_train_steps = 2", f"--input_records={records}",
        f"--model_dir={out('p5')}"], out("p5")),
      ("pt_other_run_dir", "model_dir of another run (another method)",
       ["run_pretraining", "--gin_file=gin/models/tiny.gin", "--gin_file=gin/tasks/mlm.gin",
        "--gin_param=TrainConfig.num_train_steps = 2", f"--input_records={records}",
        f"--model_dir={run}"], ""),
      ("pt_strategy_typo", "distribution strategy misspelled",
       ["run_pretraining", *tiny, "--distribution_strategy=mirror",
        f"--input_records={records}", f"--model_dir={out('p6')}"], out("p6")),
      ("pt_tpu_here", "TPU strategy on a machine without one",
       ["run_pretraining", *tiny, "--distribution_strategy=tpu", "--gin_param="
        "TrainConfig.num_train_steps = 2", f"--input_records={records}",
        f"--model_dir={out('p7')}"], out("p7")),
      ("pt_precision_typo", "mixed precision misspelled",
       ["run_pretraining", *tiny, "--mixed_precision=bf16", f"--input_records={records}",
        f"--model_dir={out('p8')}"], out("p8")),
      ("pt_eval_no_run", "eval mode on a directory with no checkpoint",
       ["run_pretraining", *tiny, "--mode=eval", f"--input_records={records}",
        f"--model_dir={out('p9')}"], out("p9")),
      ("pt_warm_missing", "warm start from a path that does not exist",
       ["run_pretraining", *tiny, f"--warm_start_from={w}/nope", "--gin_param="
        "TrainConfig.num_train_steps = 2", f"--input_records={records}",
        f"--model_dir={out('p10')}"], out("p10")),
      ("pt_gin_value_type", "a string where gin wants a number",
       ["run_pretraining", *tiny, "--gin_param=TrainConfig.num_train_steps = 'ten'",
        f"--input_records={records}", f"--model_dir={out('p11')}"], out("p11")),
      ("pt_negative_steps", "negative training steps",
       ["run_pretraining", *tiny, "--gin_param=TrainConfig.num_train_steps = -5",
        f"--input_records={records}", f"--model_dir={out('p12')}"], out("p12")),
      ("pt_records_as_vocab", "vocab_file pointing at the records",
       ["run_pretraining", *tiny, f"--vocab_file={records}", "--gin_param="
        "TrainConfig.num_train_steps = 2", f"--input_records={records}",
        f"--model_dir={out('p13')}"], out("p13")),
      # export_model
      ("export_not_a_run", "run_dir at a folder that is no run",
       ["export_model", f"--run_dir={w}", f"--output_dir={out('e1')}"], out("e1")),
      ("export_bad_format", "a format that does not exist",
       ["export_model", f"--run_dir={run}", "--format=onnx", f"--output_dir={out('e2')}"],
       out("e2")),
      ("export_exists", "output_dir already there",
       ["export_model", f"--run_dir={run}", "--format=huggingface", f"--output_dir={export}"],
       ""),
      ("export_ema_none", "--ema on a run trained without EMA",
       ["export_model", f"--run_dir={run}", "--ema", f"--output_dir={out('e3')}"], out("e3")),
      # import_checkpoint
      ("import_no_source", "source kind missing",
       ["import_checkpoint", f"--checkpoint={run}", f"--output_dir={out('i1')}"], out("i1")),
      ("import_bad_path", "checkpoint path wrong",
       ["import_checkpoint", "--source=electra_tf1", f"--checkpoint={w}/model.ckpt",
        f"--vocab_file={vocab}", f"--output_dir={out('i2')}"], out("i2")),
      ("import_wrong_kind", "our own run given as a TF1 ELECTRA checkpoint",
       ["import_checkpoint", "--source=electra_tf1", f"--checkpoint={run}",
        f"--vocab_file={vocab}", f"--output_dir={out('i3')}"], out("i3")),
      # compare_runs
      ("compare_missing_dir", "a run directory that does not exist",
       ["compare_runs", f"--model_dirs={run},{w}/nope"], ""),
      ("compare_metric_typo", "a metric no run has",
       ["compare_runs", f"--model_dirs={run}", "--metric=acuracy", f"--plot={out('c.png')}"],
       out("c.png")),
      # score_pll / score_pairs
      ("pll_missing_input", "input file missing",
       ["score_pll", f"--run_dir={run}", f"--input_file={w}/nope.txt",
        f"--output_file={out('s1.jsonl')}"], out("s1.jsonl")),
      ("pll_not_a_run", "run_dir is the export",
       ["score_pll", f"--run_dir={w}", f"--input_file={corpus}",
        f"--output_file={out('s2.jsonl')}"], out("s2.jsonl")),
      ("pairs_missing", "pairs file missing",
       ["score_pairs", f"--run_dir={run}", f"--pairs={w}/nope.jsonl",
        f"--output_dir={out('s3')}"], out("s3")),
      ("pairs_bad_score", "a score kind that does not exist",
       ["score_pairs", f"--run_dir={run}", f"--pairs={os.path.join(SHARED, 'blimp')}",
        "--score=perplexity", f"--output_dir={out('s4')}"], out("s4")),
      ("pairs_text_file", "a text file as the pairs",
       ["score_pairs", f"--run_dir={run}", f"--pairs={corpus}", f"--output_dir={out('s5')}"],
       out("s5")),
      # run_glue
      ("glue_task_typo", "task misspelled",
       ft("run_glue", "--task=sst2x", f"--data_dir={glue}/SST-2", f"--model_dir={out('g1')}"),
       out("g1")),
      ("glue_wrong_folder", "data_dir of another task",
       ft("run_glue", "--task=rte", f"--data_dir={glue}/SST-2", f"--model_dir={out('g2')}"),
       out("g2")),
      ("glue_no_init", "no init_checkpoint",
       ["run_glue", "--task=rte", f"--data_dir={glue}/RTE", f"--model_dir={out('g3')}"],
       out("g3")),
      ("glue_init_is_run", "the pre-training run dir instead of its export",
       ["run_glue", f"--init_checkpoint={run}", "--task=rte", f"--data_dir={glue}/RTE",
        f"--model_dir={out('g4')}"], out("g4")),
      ("glue_seq_too_long", "max_seq_length beyond the encoder's positions",
       ft("run_glue", "--task=rte", f"--data_dir={glue}/RTE", "--max_seq_length=512",
          f"--model_dir={out('g5')}"), out("g5")),
      ("glue_task_and_tasks", "both --task and --tasks",
       ft("run_glue", "--task=rte", "--tasks=rte,mrpc", f"--data_dir={glue}",
          f"--model_dir={out('g6')}"), out("g6")),
      ("glue_tasks_unknown", "a multi-task list naming squad",
       ft("run_glue", "--tasks=rte,squad", f"--data_dir={glue}", f"--model_dir={out('g7')}"),
       out("g7")),
      ("glue_lr_zero", "learning rate 0",
       ft("run_glue", "--task=rte", f"--data_dir={glue}/RTE", "--learning_rate=0",
          f"--model_dir={out('g8')}"), out("g8")),
      ("glue_decay_gt1", "layer-wise decay above 1",
       ft("run_glue", "--task=rte", f"--data_dir={glue}/RTE", "--layerwise_lr_decay=1.5",
          f"--model_dir={out('g9')}"), out("g9")),
      ("glue_double_rte", "--double_unordered on RTE",
       ft("run_glue", "--task=rte", f"--data_dir={glue}/RTE", "--double_unordered",
          f"--model_dir={out('g10')}"), out("g10")),
      ("glue_predict_no_test", "--do_predict where there is no test.tsv",
       ft("run_glue", "--task=rte", f"--data_dir={glue}/RTE", "--do_predict",
          "--max_train_examples=16", "--num_train_epochs=0.5", f"--model_dir={out('g11')}"),
       ""),
      ("glue_protocol_typo", "protocol misspelled",
       ft("run_glue", "--task=rte", f"--data_dir={glue}/RTE", "--protocol=BAM",
          f"--model_dir={out('g12')}"), out("g12")),
      ("glue_teacher_missing", "teacher directory that does not exist",
       ft("run_glue", "--tasks=rte,mrpc", f"--data_dir={glue}", f"--teacher_dirs=rte:{w}/t",
          f"--model_dir={out('g13')}"), out("g13")),
      # run_tagging
      ("tag_task_typo", "task misspelled",
       ft("run_tagging", "--task=postag", f"--data_dir={tagging}/pos_ptb",
          f"--model_dir={out('t1')}"), out("t1")),
      ("tag_root_dir", "the tagging root instead of the task's folder",
       ft("run_tagging", "--task=pos", f"--data_dir={tagging}", f"--model_dir={out('t2')}"),
       out("t2")),
      ("tag_label_column", "label column out of range",
       ft("run_tagging", "--task=pos", f"--data_dir={tagging}/pos_ptb", "--label_column=5",
          f"--model_dir={out('t3')}"), out("t3")),
      ("tag_pos_as_ner", "the POS folder for NER",
       ft("run_tagging", "--task=ner", f"--data_dir={tagging}/pos_ptb",
          f"--train_file={tagging}/pos_ptb/train.tsv", f"--dev_file={tagging}/pos_ptb/dev.tsv",
          f"--model_dir={out('t4')}"), out("t4")),
      ("tag_crf_teacher", "--crf with --write_train_predictions",
       ft("run_tagging", "--task=pos", f"--data_dir={tagging}/pos_ptb", "--crf",
          "--write_train_predictions", f"--model_dir={out('t5')}"), out("t5")),
      ("tag_scheme_typo", "tag scheme misspelled",
       ft("run_tagging", "--task=ner", f"--data_dir={tagging}/ner_conll2003",
          "--tag_scheme=bio", f"--model_dir={out('t6')}"), out("t6")),
      ("tag_stride_negative", "negative window stride",
       ft("run_tagging", "--task=pos", f"--data_dir={tagging}/pos_ptb", "--window_stride=-1",
          f"--model_dir={out('t7')}"), out("t7")),
      # run_squad
      ("squad_missing", "train file missing",
       ft("run_squad", f"--train_file={squad}/train-v1.1.json",
          f"--predict_file={squad}/train-v1.1-sample.json", f"--model_dir={out('q1')}"),
       out("q1")),
      ("squad_v2_as_v1", "a SQuAD 2.0 file without --version_2_with_negative",
       ft("run_squad", f"--train_file={squad}/train-v2.0-sample.json",
          f"--predict_file={squad}/train-v2.0-sample.json", f"--model_dir={out('q2')}"),
       out("q2")),
      ("squad_text_file", "a text file as the train file",
       ft("run_squad", f"--train_file={corpus}", f"--predict_file={corpus}",
          f"--model_dir={out('q3')}"), out("q3")),
      ("squad_stride", "doc_stride longer than the window",
       ft("run_squad", f"--train_file={squad}/train-v1.1-sample.json",
          f"--predict_file={squad}/train-v1.1-sample.json", "--max_seq_length=64",
          "--doc_stride=128", f"--model_dir={out('q4')}"), out("q4")),
      # run_multiple_choice
      ("race_missing", "data_dir wrong",
       ft("run_multiple_choice", "--task=race", f"--data_dir={w}/RACE",
          f"--model_dir={out('m1')}"), out("m1")),
      ("race_split_typo", "a dev split that does not exist",
       ft("run_multiple_choice", "--task=race", f"--data_dir={race}", "--dev_split=valid",
          f"--model_dir={out('m2')}"), out("m2")),
      ("race_task_glue", "a GLUE task given to run_multiple_choice",
       ft("run_multiple_choice", "--task=rte", f"--data_dir={glue}/RTE",
          f"--model_dir={out('m3')}"), out("m3")),
      # run_parsing / run_probes
      ("parse_wrong_dir", "the parsing root instead of the treebank folder",
       ft("run_parsing", f"--data_dir={os.path.join(SHARED, 'parsing')}",
          f"--model_dir={out('d1')}"), out("d1")),
      ("parse_decode_typo", "decoder misspelled",
       ft("run_parsing", f"--data_dir={ud}", "--decode=eisner", f"--model_dir={out('d2')}"),
       out("d2")),
      ("probe_no_data", "no probe data given",
       ["run_probes", f"--init_checkpoint={export}", f"--output_file={out('pr1.json')}"],
       out("pr1.json")),
      ("probe_pos_root", "the tagging root as the POS folder",
       ["run_probes", f"--init_checkpoint={export}", f"--pos_data_dir={tagging}",
        f"--output_file={out('pr2.json')}"], out("pr2.json")),
      # run_cvt / cvt_translate / train_word_vectors
      ("cvt_task_typo", "task misspelled",
       ["run_cvt", "--tasks=chunking", f"--data_dir={tagging}/chunk_conll2000",
        f"--unlabeled_data={corpus}", f"--model_dir={out('v1')}"], out("v1")),
      ("cvt_no_unlabeled", "CVT without unlabeled data",
       ["run_cvt", "--tasks=chunk", f"--data_dir={tagging}/chunk_conll2000",
        f"--model_dir={out('v2')}"], out("v2")),
      ("cvt_unlabeled_missing", "unlabeled glob matches nothing",
       ["run_cvt", "--tasks=chunk", f"--data_dir={tagging}/chunk_conll2000",
        f"--unlabeled_data={w}/nope*.txt", f"--model_dir={out('v3')}"], out("v3")),
      ("cvt_mode_typo", "mode misspelled",
       ["run_cvt", "--tasks=chunk", f"--data_dir={tagging}/chunk_conll2000", "--mode=CVT",
        f"--unlabeled_data={corpus}", f"--model_dir={out('v4')}"], out("v4")),
      ("cvt_fraction", "train_fraction as a percentage",
       ["run_cvt", "--tasks=chunk", f"--data_dir={tagging}/chunk_conll2000",
        "--train_fraction=10", f"--unlabeled_data={corpus}", f"--model_dir={out('v5')}"],
       out("v5")),
      ("cvt_vectors_missing", "word vectors file missing",
       ["run_cvt", "--tasks=chunk", f"--data_dir={tagging}/chunk_conll2000",
        f"--word_embeddings={w}/glove.txt", f"--unlabeled_data={corpus}",
        f"--model_dir={out('v6')}"], out("v6")),
      ("cvt_translate_dir", "translation with a tagging folder",
       ["run_cvt", "--tasks=translate", f"--data_dir={tagging}/chunk_conll2000",
        f"--unlabeled_data={corpus}", f"--model_dir={out('v7')}"], out("v7")),
      ("translate_no_run", "cvt_translate on a directory that is no CVT run",
       ["cvt_translate", f"--model_dir={run}", f"--input_file={m30k}/val.en",
        f"--output_file={out('tr.de')}"], out("tr.de")),
      # issue 70's cases: ranges where the flag is read, translation's pairs, messages
      ("cvt_attention_dropout", "attention dropout above 1",
       ["run_cvt", "--tasks=translate", f"--data_dir={m30k}", "--attention_dropout=1.5",
        "--mode=supervised", f"--model_dir={out('v8')}"], out("v8")),
      ("cvt_beam_zero", "beam size 0",
       ["run_cvt", "--tasks=translate", f"--data_dir={m30k}", "--beam_size=0",
        "--mode=supervised", f"--model_dir={out('v9')}"], out("v9")),
      ("cvt_decode_zero", "longest translation 0 words",
       ["run_cvt", "--tasks=translate", f"--data_dir={m30k}", "--max_decode_length=0",
        "--mode=supervised", f"--model_dir={out('v10')}"], out("v10")),
      ("cvt_blank_dev_line", "a blank line in val.de",
       ["run_cvt", "--tasks=translate", f"--data_dir={w}/mt_blank", "--mode=supervised",
        "--train_steps=2", f"--model_dir={out('v11')}"], out("v11")),
      ("cvt_multitask_root", "several tasks with a root that lacks one of them",
       ["run_cvt", "--tasks=chunk,pos", f"--data_dir={w}/root_chunk_only", "--mode=supervised",
        f"--model_dir={out('v12')}"], out("v12")),
      ("cvt_small_chunking", "a chunking slice of 800 sentences (no dev file)",
       ["run_cvt", "--tasks=chunk", f"--data_dir={w}/chunk_small", "--mode=supervised",
        f"--model_dir={out('v13')}"], out("v13")),
      ("translate_trial_one", "trial 1 of a one-trial run (its folder is trial_0)",
       ["cvt_translate", f"--model_dir={w}/mt_run", f"--input_file={m30k}/val.en",
        f"--trial=1", f"--output_file={out('tr1.de')}"], out("tr1.de")),
      ("pretrain_vocab_replaced", "the records' vocabulary replaced since (build_vocab --overwrite)",
       ["run_pretraining", *tiny, f"--input_records={w}/replaced/records",
        f"--model_dir={out('p9')}"], out("p9")),
      ("pretrain_gin_string", "a gin string for a size",
       ["run_pretraining", *tiny, f"--input_records={records}", f"--model_dir={out('p10')}",
        "--gin_param=EncoderConfig.hidden_size = 'big'"], out("p10")),
      ("export_vocab_replaced", "a run whose vocab.txt is not its checkpoint's",
       ["export_model", f"--run_dir={w}/run_other_vocab", f"--output_dir={out('e4')}"],
       out("e4")),
      ("import_mg_our_run", "our own run given as a Model Garden checkpoint",
       ["import_checkpoint", "--source=model_garden", f"--checkpoint={run}",
        f"--gin_file={run}/operative_config.gin", f"--vocab_file={vocab}",
        f"--output_dir={out('i4')}"], out("i4")),
      ("records_disk_full_beam", "records on Beam's DirectRunner (a worker per core), disk full",
       ["create_pretraining_data", f"--input_files={corpus}", f"--vocab_file={vocab}",
        "--runner=DirectRunner", "--max_seq_length=64", "--dupe_factor=4",
        f"--output_dir={w}/small_disk/records"], f"{w}/small_disk/records"),
      ("w2v_missing", "input glob matches nothing",
       ["train_word_vectors", f"--input_files={w}/nope*.txt", f"--output_file={out('w.txt')}"],
       out("w.txt")),
      ("w2v_dim_zero", "dimension 0",
       ["train_word_vectors", f"--input_files={corpus}", "--dim=0",
        f"--output_file={out('w2.txt')}"], out("w2.txt")),
      # issue 87: inputs read in the format they are, settings that take effect or are refused
      ("predict_conllu_as_text", "a CoNLL-U file read as the default text",
       ["cvt_predict", f"--model_dir={w}/chunk_run", f"--input_file={ud}/en_ewt-ud-dev.conllu",
        "--input_format=text", f"--output_file={out('cp1.txt')}"], out("cp1.txt")),
      ("predict_conllu_as_conll", "a CoNLL-U file read as a column file",
       ["cvt_predict", f"--model_dir={w}/chunk_run", f"--input_file={ud}/en_ewt-ud-dev.conllu",
        "--input_format=conll", f"--output_file={out('cp2.txt')}"], out("cp2.txt")),
      ("predict_text_as_conll", "a sentence-per-line file read as a column file",
       ["cvt_predict", f"--model_dir={w}/chunk_run", f"--input_file={w}/sentences.txt",
        "--input_format=conll", f"--output_file={out('cp3.txt')}"], out("cp3.txt")),
      ("predict_trial_folder", "a trial's folder as --model_dir",
       ["cvt_predict", f"--model_dir={w}/chunk_run/trial_0", f"--input_file={w}/sentences.txt",
        f"--output_file={out('cp4.txt')}"], out("cp4.txt")),
      ("pretrain_rtd_after_the_end", "the ELECTRA recipe's warm-up longer than the run",
       ["run_pretraining", "--gin_file=gin/models/tiny.gin",
        "--gin_file=gin/recipes/electra_one_machine.gin", f"--input_records={records}",
        f"--model_dir={out('p11')}", "--gin_param=TrainConfig.num_train_steps = 20"], out("p11")),
      ("pretrain_recipe_switches_with_mlm", "the recipe's switches bound with BERT-MLM",
       ["run_pretraining", "--gin_file=gin/models/tiny.gin", "--gin_file=gin/tasks/mlm.gin",
        f"--input_records={records}", f"--model_dir={out('p12')}",
        "--gin_param=build_electra_pretrainer.rtd_start_step = 3000"], out("p12")),
      ("pretrain_warmup_file_with_mlm", "the masked-LM warm-up's file after BERT-MLM's task",
       ["run_pretraining", "--gin_file=gin/models/tiny.gin", "--gin_file=gin/tasks/mlm.gin",
        "--gin_file=gin/recipes/masked_lm_warmup.gin", f"--input_records={records}",
        f"--model_dir={out('p15')}", "--gin_param=TrainConfig.num_train_steps = 2"], out("p15")),
      ("pretrain_recipe_after_mlm", "the ELECTRA recipe after mlm.gin",
       ["run_pretraining", "--gin_file=gin/models/tiny.gin", "--gin_file=gin/tasks/mlm.gin",
        "--gin_file=gin/recipes/electra_one_machine.gin", f"--input_records={records}",
        f"--model_dir={out('p13')}"], out("p13")),
      ("cvt_two_word_sentences", "a length limit that leaves one unlabeled sentence",
       ["run_cvt", "--tasks=chunk", f"--data_dir={tagging}/chunk_conll2000", "--mode=cvt",
        "--max_train_sentences=40", "--train_steps=2", f"--unlabeled_data={corpus}",
        "--max_sentence_length=2", f"--model_dir={out('c20')}"], ""),
      ("bench_pv_unknown_stage", "pretraining_value.py with a misspelled stage",
       [sys.executable, "benchmarks/pretraining_value.py", f"--work_dir={out('pv1')}",
        "--stages=data,pretrian"], out("pv1")),
      ("bench_glue_text_existing", "glue_text.py over an existing file",
       [sys.executable, "benchmarks/glue_text.py", f"--output_file={text}"], ""),
      ("bench_glue_text_genre", "glue_text.py with an STS-B genre that matches nothing",
       [sys.executable, "benchmarks/glue_text.py", "--sts_b_genres=main-nwes",
        f"--output_file={out('news.txt')}"], out("news.txt")),
      ("bench_cvt_labels_shard", "cvt_labels.py --shard=2/2",
       [sys.executable, "benchmarks/cvt_labels.py", f"--work_dir={out('cl1')}", "--shard=2/2"],
       out("cl1")),
      ("bench_cvt_labels_task", "cvt_labels.py with a misspelled task",
       [sys.executable, "benchmarks/cvt_labels.py", f"--work_dir={out('cl2')}", "--tasks=nre"],
       out("cl2")),
      # any tool
      ("any_unknown_flag", "a flag of another tool",
       ["run_glue", "--task=rte", "--gin_file=gin/models/tiny.gin"], ""),
      ("any_flag_typo", "a misspelled flag",
       ["build_vocab", f"--input_file={corpus}", f"--output_file={out('v5.txt')}"], ""),
      ("any_bool_value", "a boolean flag given a word",
       ft("run_glue", "--task=rte", f"--data_dir={glue}/RTE", "--do_predict=maybe",
          f"--model_dir={out('g14')}"), out("g14")),
      ("any_notes_as_input", "a notes file with a bad encoding as the corpus",
       ["build_vocab", f"--input_files={text}", f"--output_file={out('v6.txt')}"],
       out("v6.txt")),
  ]


def setup(w):
  """The quickstart run the cases start from (a few steps), copies of its vocabulary and records
  for the cases that write over existing outputs (so that a tool that wrongly replaces them
  leaves the run's own intact for the later cases), and a Latin-1 notes file."""
  qs = os.path.join(w, "qs")
  if not os.path.isdir(os.path.join(qs, "model", "export")):
    common.run_tool(["rtd_quickstart", f"--output_dir={qs}", "--num_train_steps=4",
                     "--vocab_size=1000"])
  existing = os.path.join(w, "existing")
  shutil.rmtree(existing, ignore_errors=True)
  os.makedirs(existing)
  shutil.copy(os.path.join(qs, "vocab.txt"), existing)
  shutil.copytree(os.path.join(qs, "records"), os.path.join(existing, "records"))
  with open(os.path.join(w, "notes.txt"), "wb") as f:
    f.write("caf\xe9 cr\xe8me br\xfbl\xe9e\n".encode("latin-1") * 50)
  issue_70_fixtures(w, qs)


def issue_70_fixtures(w, qs):
  """A Multi30k slice with a blank line in val.de (and a tiny translation run on the intact
  slice), a root holding chunking only, a chunking slice of 800 sentences, records whose
  vocabulary file was replaced since, a 300 KB disk, and a copy of the run with another
  vocab.txt."""
  m30k, tagging = os.path.join(SHARED, "translation", "multi30k"), os.path.join(SHARED, "tagging")
  for name, blank in (("mt_slice", False), ("mt_blank", True)):
    os.makedirs(os.path.join(w, name), exist_ok=True)
    for split, count in (("train", 200), ("val", 20)):
      for lang in ("en", "de"):
        with open(os.path.join(m30k, f"{split}.{lang}"), encoding="utf-8") as f:
          lines = f.read().split("\n")[:count]
        if blank and (split, lang) == ("val", "de"):
          lines[4] = ""
        with open(os.path.join(w, name, f"{split}.{lang}"), "w", encoding="utf-8") as f:
          f.write("\n".join(lines) + "\n")
  if not os.path.isfile(os.path.join(w, "mt_run", "eval_results.json")):
    common.run_tool(["run_cvt", "--tasks=translate", f"--data_dir={w}/mt_slice",
                     "--mode=supervised", "--train_steps=2", "--word_dim=16", "--lstm1_size=16",
                     "--lstm2_size=8", "--projection_size=8", "--hidden_size=16",
                     "--eval_every_steps=0", f"--model_dir={w}/mt_run"])
  with open(os.path.join(tagging, "chunk_conll2000", "train.txt"), encoding="utf-8") as f:
    sentences = f.read().strip().split("\n\n")
  for name, count in (("root_chunk_only", len(sentences)), ("chunk_small", 800)):
    os.makedirs(os.path.join(w, name, "chunk_conll2000"), exist_ok=True)
    with open(os.path.join(w, name, "chunk_conll2000", "train.txt"), "w", encoding="utf-8") as f:
      f.write("\n\n".join(sentences[:count]) + "\n")
  replaced = os.path.join(w, "replaced")
  shutil.rmtree(replaced, ignore_errors=True)
  os.makedirs(replaced)
  shutil.copy(os.path.join(qs, "vocab.txt"), replaced)
  corpus = os.path.join(REPO, "data", "corpus_sample", "gutenberg_sample.txt")
  common.run_tool(["create_pretraining_data", f"--input_files={corpus}",
                   f"--vocab_file={replaced}/vocab.txt", "--max_seq_length=64",
                   "--max_predictions_per_seq=10", f"--output_dir={replaced}/records"])
  with open(os.path.join(replaced, "vocab.txt"), "a", encoding="utf-8") as f:
    f.write("zzzunseentoken\n")
  small = os.path.join(w, "small_disk")  # a 300 KB disk (root only; else the case fails to mount)
  os.makedirs(small, exist_ok=True)
  if not os.path.ismount(small):
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=300k", "tmpfs", small], check=False)
  if not os.path.isfile(os.path.join(w, "chunk_run", "eval_results.json")):
    common.run_tool(["run_cvt", "--tasks=chunk", f"--data_dir={tagging}/chunk_conll2000",
                     "--mode=supervised", "--train_steps=2", "--word_dim=16", "--lstm1_size=16",
                     "--lstm2_size=8", "--projection_size=8", "--hidden_size=16",
                     "--max_train_sentences=40", "--vocab_unlabeled_sentences=0",
                     "--eval_every_steps=0", f"--model_dir={w}/chunk_run"])
  with open(os.path.join(w, "sentences.txt"), "w", encoding="utf-8") as f:
    f.write("Confidence in the pound is widely expected to take another sharp dive .\n"
            "He said so .\n\nThe market fell .\n")
  other = os.path.join(w, "run_other_vocab")
  shutil.rmtree(other, ignore_errors=True)
  shutil.copytree(os.path.join(qs, "model"), other)
  shutil.copy(os.path.join(replaced, "vocab.txt"), os.path.join(other, "vocab.txt"))


def main(_):
  w = os.path.abspath(FLAGS.work_dir)
  os.makedirs(w, exist_ok=True)
  setup(w)
  shutil.rmtree(os.path.join(w, "out"), ignore_errors=True)
  os.makedirs(os.path.join(w, "out"))
  table = common.TableWriter(["case", "mistake", "command", "exit", "seconds", "last line",
                              "left behind"])
  for name, mistake, argv, leaves in cases(w):
    if FLAGS.cases and not name.startswith(tuple(FLAGS.cases)):
      continue
    watch = common.Stopwatch()
    try:
      result = subprocess.run(argv, capture_output=True, text=True, timeout=FLAGS.timeout,
                              stdin=subprocess.DEVNULL, cwd=REPO)
      code, output = result.returncode, (result.stdout + "\n" + result.stderr)
    except subprocess.TimeoutExpired:
      code, output = "timeout", ""
    lines = [l for l in output.splitlines() if l.strip()]
    last = lines[-1].strip() if lines else "(nothing)"
    left = "yes" if leaves and code != 0 and os.path.exists(leaves) else "no"
    shown = " ".join(shlex.quote(a) for a in argv).replace(w, "W").replace(REPO + "/", "")
    table.row(name, mistake, f"`{shown}`", code, f"{watch.seconds:.0f}",
              last.replace(w, "W")[:400], left)


if __name__ == "__main__":
  flags.mark_flag_as_required("work_dir")
  sys.exit(app.run(main))
