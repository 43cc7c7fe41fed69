# The image engine's own process: stable-diffusion.cpp through the `inferna` wheel (PyPI, MIT), which ships it
# prebuilt for the CPU. No Node binding of stable-diffusion.cpp is published, hence Python; the server runs this file
# in a virtual environment of its own (python-env.ts) and talks to it over Node's IPC channel: with
# `serialization: "json"` that channel is a socket at fd NODE_CHANNEL_FD carrying one JSON object per line, which any
# process can speak. The supervisor (child-supervisor.ts) starts it, pings it while idle and restarts it when it dies.
#
# Protocol:
#   parent -> child: {"type": "draw", "id", "prompt", "width", "height", "seed", "steps", "init", "out"}
#                    init: a PNG path (the reference picture of an edit or variation) or null; out: the PNG paths to
#                    write, one per picture, picture i drawn at seed + i in one engine call (so a reference picture
#                    is encoded once for all of them).
#                    {"type": "cancel", "id"}: stops that draw between steps; {"type": "ping", "seq"}
#   child -> parent: {"type": "ready", "info"} once; {"type": "done", "id", "ms"} | {"type": "failed", "id", "message"} |
#                    {"type": "cancelled", "id"}; {"type": "pong", "seq"}
# Pictures cross as files (a folder of the parent's): the wheel's image type reads and writes PNG without numpy,
# which keeps the environment to one pinned package.

import json
import os
import socket
import sys
import threading
import time


def main() -> None:
    if len(sys.argv) < 6 or "NODE_CHANNEL_FD" not in os.environ:
        sys.stderr.write("image-worker: run by the server with <diffusion> <text-encoder> <vae> <threads> <reference side>\n")
        sys.exit(2)
    diffusion, text_encoder, vae, threads = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    ref_side = int(sys.argv[5])
    channel = socket.socket(fileno=int(os.environ["NODE_CHANNEL_FD"]))
    reader = channel.makefile("r", encoding="utf-8")
    write_lock = threading.Lock()

    def send(message: dict) -> None:
        data = (json.dumps(message) + "\n").encode("utf-8")
        with write_lock:
            channel.sendall(data)

    try:
        from inferna.sd import stable_diffusion as sd
    except Exception as e:  # the venv was made for another machine, or the wheel's library does not load here
        sys.stderr.write(f"image-worker: could not load inferna: {e}\n")
        sys.exit(1)

    params = sd.SDContextParams(diffusion_model_path=diffusion, vae_path=vae, n_threads=threads)
    params.llm_path = text_encoder
    # Flash attention in the transformer and the text encoder: on the CPU it draws 1.5 to 2 times faster (measured
    # with the test weights: 512x512 in 1.1 s against 1.7 s on one thread), and its output is as deterministic.
    params.diffusion_flash_attn = True
    params.flash_attn = True
    started = time.monotonic()
    try:
        ctx = sd.SDContext(params)
    except Exception as e:
        sys.stderr.write(f"image-worker: could not load the model: {e}\n")
        sys.exit(1)
    if not ctx.is_valid:
        sys.stderr.write("image-worker: stable-diffusion.cpp did not recognise the model files\n")
        sys.exit(1)
    send({"type": "ready", "info": {"model": ctx.model_version, "threads": threads,
                                    "load_ms": round((time.monotonic() - started) * 1000)}})

    jobs: list = []
    jobs_ready = threading.Condition()
    # The draw running now, and whether its cancel was asked for: a cancelled draw ends in the engine's generic
    # "Image generation failed", which is then a cancellation, not a failure.
    current = {"id": None, "cancelled": False}

    def read_loop() -> None:
        # Reads while a draw runs (the draw releases the GIL): a cancel reaches the engine between steps, a ping
        # is answered at once.
        for line in reader:
            try:
                m = json.loads(line)
            except ValueError:
                continue
            kind = m.get("type")
            if kind == "ping":
                send({"type": "pong", "seq": m.get("seq")})
            elif kind == "cancel":
                with jobs_ready:
                    queued = [j for j in jobs if j.get("id") == m.get("id")]
                    for j in queued:
                        jobs.remove(j)
                        send({"type": "cancelled", "id": j["id"]})
                    if current["id"] == m.get("id"):
                        current["cancelled"] = True
                        ctx.cancel(int(sd.CancelMode.ALL))
            elif kind == "draw":
                with jobs_ready:
                    jobs.append(m)
                    jobs_ready.notify()
        # The parent is gone: nothing will read our answers.
        os._exit(0)

    threading.Thread(target=read_loop, daemon=True).start()
    while True:
        with jobs_ready:
            while not jobs:
                jobs_ready.wait()
            job = jobs.pop(0)
            current["id"] = job["id"]
            current["cancelled"] = False
            ctx.cancel(int(sd.CancelMode.RESET))
        try:
            began = time.monotonic()
            drawn = draw(sd, ctx, job, ref_side)
            with jobs_ready:
                current["id"] = None
            if drawn:
                send({"type": "done", "id": job["id"], "ms": round((time.monotonic() - began) * 1000)})
            else:
                send({"type": "cancelled", "id": job["id"]})
        except Exception as e:
            with jobs_ready:
                cancelled = current["cancelled"]
                current["id"] = None
            if cancelled:
                send({"type": "cancelled", "id": job["id"]})
            else:
                send({"type": "failed", "id": job["id"], "message": str(e)})


def draw(sd, ctx, job: dict, ref_side: int) -> bool:
    """The job's pictures into job["out"]; False when it was cancelled."""
    outs = job["out"]
    p = sd.SDImageGenParams(prompt=job["prompt"], width=job["width"], height=job["height"], seed=job["seed"],
                            batch_count=len(outs), sample_steps=job["steps"], cfg_scale=1.0)
    if job.get("init"):
        # FLUX.2 edits by reference: the picture's latents join the prompt's tokens and each picture starts from its
        # own noise. A variation is the same with no prompt. (Image-to-image would not do: at 4 steps
        # stable-diffusion.cpp starts from pure noise for any strength of 0.75 or more.)
        p.set_ref_images([sd.SDImage(sd._n.SDImage.load_stb(job["init"], 3))])
        if ref_side * ref_side < job["width"] * job["height"]:
            # SVC_IMAGE_REF_SIDE: the engine scales the picture down before its autoencoder encodes it.
            p.ref_image_args = f"vae_input_max_pixels={ref_side * ref_side}"
    images = ctx.generate_with_params(p)
    if len(images) != len(outs) or not all(i.is_valid for i in images):
        return False
    for image, out in zip(images, outs):
        image.save_png(out)
    return True


if __name__ == "__main__":
    main()
