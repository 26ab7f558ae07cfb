r"""Fine-tunes an exported encoder on a GLUE task with the ELECTRA protocol, or on several at
once with BAM (multi-task learning, born-again distillation, teacher annealing).

  run_glue --task=rte --data_dir=../shared/data/glue/RTE \
      --init_checkpoint=/runs/electra_small/export --model_dir=/runs/glue/rte --num_trials=10
  run_glue --tasks=cola,sst-2,mrpc,sts-b,rte --data_dir=../shared/data/glue \
      --teachers_from=/runs/glue --init_checkpoint=... --model_dir=/runs/bam

Writes `<model_dir>/eval_results.json` (per-trial and median dev metrics, spread, flags) and, with
`--do_predict`, `<TASK>.tsv` test predictions in the GLUE submission format; with
`--write_train_predictions`, `train_predictions_<task>.json` (a teacher for --teacher_dirs).
Re-running resumes with the first unfinished trial (or its last checkpoint).
"""
# First: quiets TensorFlow's C++ start-up output before anything imports TensorFlow.
from official_rtd.tools import cli  # pylint: disable=unused-import
from official_rtd.tools import finetune_flags
from official_rtd.finetune import configs  # pylint: disable=g-bad-import-order

COMMAND_LINE = finetune_flags.common_spec(configs.GlueConfig, {
    "task": "Single-task: cola, sst-2, mrpc, sts-b, qqp, mnli, qnli, rte or wnli.",
    "tasks": "Multi-task (BAM): a comma list of tasks sharing one encoder: GLUE tasks and the "
             "tagging tasks pos, chunk, ner (one task: with a teacher, Single->Single "
             "distillation).",
    "data_dir": "The task's folder with GLUE train.tsv/dev.tsv(/test.tsv), or (--tasks) a root "
                "holding CoLA/, SST-2/, ... (and pos_ptb/, chunk_conll2000/, ner_conll2003/).",
    "task_data_dirs": "Multi-task: task:dir,... for tasks whose data is not under --data_dir "
                      "(e.g. pos:../shared/data/tagging/pos_ptb).",
    "tfds_data_dir": "A TFDS data dir already holding glue/<task> (never downloads).",
    "double_unordered": "MRPC/STS-B: train on both sentence orders and average both orders' "
                        "predictions.",
    "do_predict": "Also write test-set predictions (<TASK>.tsv).",
    "write_train_predictions": "Write the best trial's training-set logits/values "
                               "(train_predictions_<task>.json): a distillation teacher.",
    "task_sampling_exponent": "Multi-task: sample task t with probability |D_t|^x (0 uniform, "
                              "1 proportional).",
    "eval_every_steps": "Dev evaluation every N steps (0: at the end only); the dev curve is "
                        "kept in trial_<k>/selection.json, so a resumed trial keeps it.",
    "patience": "Stop a trial after this many dev evaluations (--eval_every_steps) in a row "
                "without a better primary figure (0: never); its dev figures are then those of "
                "the weights it stopped with.",
    "teacher_dirs": "Distillation: task:dir,... of run_glue (or, for a tagging task, "
                    "run_tagging) runs, single- or multi-task, with "
                    "--write_train_predictions.",
    "teachers_from": "Distillation: a root whose <task>/ folders are teacher runs.",
    "teacher_annealing": "linear: lambda 0 -> 1 over training (teacher annealing); fixed: "
                         "--lambda throughout.",
    "teacher_lambda": "The fixed lambda (also --lambda): target = lambda*gold + "
                      "(1-lambda)*teacher.",
    "protocol": "Single-task (--task): electra: ELECTRA's fine-tuning (size defaults, 3 epochs, "
                "10 for RTE/STS-B, a linear STS-B head); bam: BAM's single-task models and "
                "teachers (BERT's lr 5e-5, batch 32, 3 epochs, layer-wise decay 0.9 as lr*a^d, "
                "STS-B as sigmoid on labels/5, the multi-task student's head). Flags given "
                "still win.",
    "single_task_finetune": "A multi-task run's model_dir: start from its best trial (encoder "
                            "and heads); learning rate default 1e-5 (Table 3.3).",
}, enums={"protocol": ["electra", "bam"]}, aliases={"lambda": "teacher_lambda"})


def check(config):
  """Exactly one of --task and --tasks; an unknown GLUE name is refused naming the GLUE tasks."""
  from official_rtd.data import glue_data  # pylint: disable=g-import-not-at-top
  if bool(config.task) == bool(config.tasks):
    raise ValueError("give exactly one of --task (single-task) and --tasks (multi-task)")
  if config.task:
    glue_data.get_task(config.task)


run = finetune_flags.tool(__name__, "run_glue", COMMAND_LINE, check)


if __name__ == "__main__":
  run()
