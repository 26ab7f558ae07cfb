"""Every CVT task, registered by importing its module (`task.register`): a new task is one
module and one line here."""
# pylint: disable=unused-import
from official_rtd.cvt import parser  # dep
from official_rtd.cvt import tagger  # pos, chunk, ner
from official_rtd.cvt import translator  # translate
