"""`smq ui`: the queue in the browser (:mod:`tjq.ui.server`)."""

from __future__ import annotations

from tjq.cli import arguments


def add_parser(commands, api) -> None:
    """`smq ui`'s flags (``api``: the parser of --url, --api-id and --region)."""
    from tjq.ui.server import DEFAULT_PORT

    ui = commands.add_parser(
        "ui", parents=[api], help="the queue in the browser, served on 127.0.0.1"
    )
    ui.add_argument(
        "--port",
        type=arguments.port,
        default=DEFAULT_PORT,
        help=f"listen on 127.0.0.1:PORT (default {DEFAULT_PORT}; 0: any free port)",
    )
    ui.add_argument("--open", action="store_true", help="open the page in the web browser")
    ui.add_argument(
        "--allow-actions",
        action="store_true",
        help="let the page cancel and reprioritise jobs (the queue's own rules still apply)",
    )
    ui.set_defaults(run=ui_command)


def ui_command(args) -> int:
    """Serve the page until Ctrl-C. The queue's URL and the credentials are checked before
    it listens: without them the page could show nothing."""
    import webbrowser

    from tjq.cli.common import client
    from tjq.ui.server import UiApi, UiServer

    # The page asks again in seconds: no long back-off behind one of its reads.
    queue = client(args, retries=1)
    queue.credentials()
    server = UiServer(UiApi(queue, allow_actions=args.allow_actions), args.port)
    mode = "cancel and priority allowed" if args.allow_actions else "read-only"
    print(f"smq ui: {queue.url} on {server.url} ({mode}; Ctrl-C to stop)", flush=True)
    if args.open:
        webbrowser.open(server.url)
    try:
        server.serve_forever()
    finally:
        server.server_close()
    return 0
