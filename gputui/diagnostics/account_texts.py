"""What the waiting cost in words, en and zh (catalog.py merges them): the two halves of idle that the account
tells apart, the lines of its tally, and the report's before and after each mark (an account per span).

Apart from account.py, as verdict_texts.py is from verdict.py: the catalog merges these and account.py looks them up
through the catalog.
"""

from __future__ import annotations

from gputui.diagnostics.locale import Texts

TEXTS: Texts = {
    "en": {
        "account.class.idle_allocated": "Idle (allocated)",
        "account.class.idle_free": "Idle (free)",
        "account.heading": "Where the GPU time went ({window} on {gpus}):",
        "account.line": "{label} {parts}: {gpu_hours} GPU-hours",
        "account.line.cost": "{label} {parts}: {gpu_hours} GPU-hours, {cost} at {price}",
        "account.part": "{gpus} {duration}",
        "account.part.each": "{gpus} {duration} each",
        "account.gpus.one": "{count} GPU",
        "account.gpus.some": "{count} GPUs",
        "account.tally": "Cost: {items}",
        "account.tally.item": "{label} {cost}",
        "account.separator": ", ",
        "account.compare.heading": "Before and after each mark (GPU busy: mean utilization; a class: its share of "
        "the GPU time):",
        "account.compare.line": "{clock} {label}: {figures}",
        "account.compare.busy": "GPU busy {before} → {after}",
        "account.compare.class": "{label} {before} → {after}",
        "account.compare.short": "{clock} {label}: too short to judge ({before} before, {after} after; the verdict "
        "looks at {need})",
    },
    "zh": {
        "account.class.idle_allocated": "空闲但已分配",
        "account.class.idle_free": "空闲且未分配",
        "account.heading": "GPU 时间的去向（{window}，{gpus}）：",
        "account.line": "{label} {parts}：{gpu_hours} GPU 小时",
        "account.line.cost": "{label} {parts}：{gpu_hours} GPU 小时，{cost}（每 GPU 小时 {price}）",
        "account.part": "{gpus} {duration}",
        "account.part.each": "{gpus} 各 {duration}",
        "account.gpus.one": "{count} 块 GPU",
        "account.gpus.some": "{count} 块 GPU",
        "account.tally": "花费：{items}",
        "account.tally.item": "{label} {cost}",
        "account.separator": "，",
        "account.compare.heading": "每个标记前后（GPU 忙碌：平均利用率；各类：占 GPU 时间的比例）：",
        "account.compare.line": "{clock} {label}：{figures}",
        "account.compare.busy": "GPU 忙碌 {before} → {after}",
        "account.compare.class": "{label} {before} → {after}",
        "account.compare.short": "{clock} {label}：时间太短，无法判断（之前 {before}，之后 {after}；结论需要 {need}）",
    },
}
