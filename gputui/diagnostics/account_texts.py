"""What the waiting cost in words, en and zh (catalog.py merges them): the two halves of idle that the account
tells apart, and the lines of its tally.

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
    },
}
