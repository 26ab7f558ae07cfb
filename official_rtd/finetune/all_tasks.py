"""Every fine-tuning task module, imported once so that each registers its names
(`task.register`): what the fine-tuning tools import instead of naming modules in each `main`. A new
task module adds its import here."""
from official_rtd.finetune.bam import multitask
# pylint: disable=unused-import
from official_rtd.finetune.glue import task as glue
from official_rtd.finetune.parsing import task as parsing
from official_rtd.finetune.race import task as multiple_choice
from official_rtd.finetune.squad import task as squad
from official_rtd.finetune.tagging import task as tagging
