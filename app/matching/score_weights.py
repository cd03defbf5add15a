"""The points of each score component, the thresholds ranking decides by, and the version
that names them: a perfect match of a specific message with agreeing context is ~100.

The components that give these points are app.matching.score; what is put below what,
app.matching.rank_order.
"""

FULL_MESSAGE = 40
FULL_LINE = 34
PARTIAL_MIN, PARTIAL_SPAN = 12, 14  # partial: 12 + 14 * share of the message covered
# A message that matches no template in full: cut by the end of the paste, it
# scores by the share of the template it shows; a near copy loses points per changed word.
CUT_MIN, CUT_SPAN = 12, 26
NEAR_MESSAGE, NEAR_PER_WORD = 32, 5
OUTSIDE_MESSAGE = 8  # a hit in a log line that no exception claims
# A log site's record whose pattern matches a whole log line: the line is its message, as a
# whole message is an exception's; the level the line's prefix names is its class.
LOG_LINE, LOG_LINE_ID = FULL_LINE, "message.log-line"
IN_TRACEBACK_NOISE = 1  # a hit in a frame line (paths), almost always noise
SPECIFICITY_MAX, SPECIFICITY_PER_POINT = 15, 4
CLASS_AGREES, CLASS_DIFFERS = 15, -15
CLASS_RELATED = 6  # a subclass or superclass: renamed or refined between releases
FILE_IN_FRAMES, FILE_INNERMOST, SAME_LINE = 12, 6, 6
# Raised in code no frame of the record's file is in: the innermost frame is where a
# traceback's exception was raised, so a record elsewhere is at most a copy of the message
# (transformers' or pydantic's text in a vLLM model, a site that moved): a possibility only.
RAISED_ELSEWHERE = -30
# Raised in the raising helper the record's site calls with its message (SGLang's
# `raise_error_or_warn`): the helper's frame is innermost, as the record's own would be.
RAISED_BY_HELPER = FILE_INNERMOST
SAME_FUNCTION = 4
REPO_AGREES, REPO_DIFFERS = 5, -5
# The paste names a release (`vLLM API server version 0.6.3`): a record whose site that
# release raises against one it does not (the same message, moved from file to file).
RELEASE_AGREES, RELEASE_DIFFERS = 6, -6
LAST_EXCEPTION, ROOT_CAUSE = 4, 4
# Being reviewed outweighs a line number: a draft that explains the text as well
# only because a frame sits on its exact line must not push the explained record down.
REVIEWED_BONUS, GONE_PENALTY = SAME_LINE + 1, -2
GONE_COMPONENT = "record.gone"
REVIEWED_COMPONENT, DRAFT_COMPONENT = "record.reviewed", "record.draft"
FRAMES_MARGIN = 0.5  # how far below a record from a frame's file the others are put
# Found by where it raises: a fully dynamic message has nothing else to go by, and
# a site raising at the very line of the innermost frame is strong evidence; a record whose
# template does not fit the message (the message changed) is weaker.
RAISED_HERE_DYNAMIC, RAISED_HERE_OTHER_MESSAGE = 34, 14
# From this score a match is "likely" (below it a possibility only). A paste that names the
# projects it comes from (frames, package paths, log prefixes, a banner, a `pip list` row)
# names the project of a likely answer: another project's record holds the message in the
# same words at most (SGLang's loader beside vLLM's, a Modal wrapper's vLLM paste answered
# by torch's profiler), and stays a possibility.
LIKELY = 50
# A record whose pattern matches a kernel's assertion line before a device-side assert: the
# site that failed, more specific than the CUDA error that reports it afterwards.
KERNEL_ASSERTION = 8
RUN_TIME_CLASSES = frozenset({"Exception", "BaseException"})  # neither agrees nor differs
NEEDS_FRAMES_BELOW = 12  # literal characters; fewer, and a frame must be in the record's file
# Fewer literal characters than this (`CUDA error: {error}`, `No module named {name}`): the
# template fits messages that other code (the CUDA driver, the interpreter, another
# project) raises in the same words, so without a frame in its file it is a possibility only.
GENERIC_BELOW, GENERIC_TEMPLATE = 24, -25
# Named anew whenever the weights or the components change: scores are comparable only
# between results of the same version.
RANKING_VERSION = "2026-12-07.1"
POINTS_DIGITS = 2
