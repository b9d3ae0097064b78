// PX4/PX4-Autopilot system parameters (stored file id 47623236, path not named by the index)
PARAM_DEFINE_INT32(SYS_HITL, 0);
