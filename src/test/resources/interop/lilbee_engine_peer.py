"""A peer made of real lilbee: its engine-dir functions from lilbee.runtime.engine_lock.

usage: lilbee_engine_peer.py COMMAND ENGINE_DIR [ARG]
  names           print lilbee's file names: reaper lock, build lock, users dir
  hold-user       hold_user_lock(ENGINE_DIR); print "held", hold until stdin closes or killed
  live-users      print live_users_exist(ENGINE_DIR): "True" or "False"
  build-lock      with build_lock(ENGINE_DIR): print "locked", hold until stdin closes or killed
  reaper-running  print reaper_running(ENGINE_DIR): "True" or "False"
  keep-warm       request_keep_warm(ENGINE_DIR, ARG (a config root), 1 minute); print the marker's name
  reaper          lilbee's own reaper process (lilbee.providers.fleet.engine_reaper.main) on ENGINE_DIR
"""
import sys
from pathlib import Path

from lilbee.runtime import engine_lock

command, engine_dir = sys.argv[1], Path(sys.argv[2])
if command == "names":
    print(engine_lock._REAPER_LOCK_NAME, engine_lock._BUILD_LOCK_NAME, engine_lock._USERS_DIRNAME, flush=True)
elif command == "hold-user":
    hold = engine_lock.hold_user_lock(engine_dir)
    print("held", flush=True)
    sys.stdin.read()
    hold.release_and_check_last()
elif command == "live-users":
    print(engine_lock.live_users_exist(engine_dir), flush=True)
elif command == "build-lock":
    with engine_lock.build_lock(engine_dir):
        print("locked", flush=True)
        sys.stdin.read()
elif command == "reaper-running":
    print(engine_lock.reaper_running(engine_dir), flush=True)
elif command == "keep-warm":
    engine_lock.request_keep_warm(engine_dir, Path(sys.argv[3]), 1)
    print(next(engine_dir.joinpath(engine_lock._USERS_DIRNAME).glob("*.keep-warm")).name, flush=True)
elif command == "reaper":
    from lilbee.providers.fleet import engine_reaper

    sys.argv = [sys.argv[0], str(engine_dir)]
    engine_reaper.main()
else:
    sys.exit("unknown command " + command)
