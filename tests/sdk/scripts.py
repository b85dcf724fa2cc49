"""What the tests of resumed jobs share under either SDK: a training script that uses
`tjq.training` (the local API that runs it is tests/sdk/conftest.py's ``scripts_env``)."""

CHECKPOINTS = "s3://sagemaker-local/checkpoints/"

# Counts steps; saves its count in /opt/ml/checkpoints when stopped, and resumes from it.
# Until it is resumed it trains until stopped (or for --steps); resumed, for --more steps.
SCRIPT = """
import argparse, json, math, time
from tjq import training

parser = argparse.ArgumentParser()
parser.add_argument("--steps", type=float, default=math.inf)
parser.add_argument("--more", type=int, default=5)
args = parser.parse_args()

step, target = 0, args.steps
if (latest := training.latest_checkpoint(pattern="step-*.json")) is not None:
    step = json.loads(latest.read_text())["step"]
    target = step + args.more
    print(f"resumed from step {step}", flush=True)


def save(folder):
    with training.saving(folder / f"step-{step}.json") as partial:
        partial.write_text(json.dumps({"step": step}))
    print(f"saved at step {step}", flush=True)


training.save_on_stop(save)
while step < target:
    time.sleep(0.05)
    step += 1
    print(f"step {step}", flush=True)
print(f"finished at step {step}", flush=True)
"""
