"""Every fine-tuning task module, imported once so that each registers its names
(`task.register`): what the fine-tuning tools import instead of naming modules in each `main`. A new
task module adds its import here."""
# pylint: disable=unused-import
from official_rtd.finetune import glue
from official_rtd.finetune import multiple_choice
from official_rtd.finetune import multitask
from official_rtd.finetune import parsing
from official_rtd.finetune import squad
from official_rtd.finetune import tagging
