// PX4/PX4-Autopilot src/lib/systemlib/system_params.c, stored file id 47623236 (PARAM_DEFINE lines; only the one system_params.yaml lacks: PX4's mavsdk_tests set it for failure injection)
PARAM_DEFINE_INT32(SYS_FAILURE_EN, 0);
