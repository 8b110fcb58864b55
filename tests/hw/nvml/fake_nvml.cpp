// A stand-in libnvidia-ml: NVML's C symbols with fixed readings, for tests on machines without a
// GPU. Locking clocks needs FAKE_NVML_PRIVILEGED=1, as the real one needs root.
#include <cstdlib>
#include <cstring>

extern "C" {
static int g_locked_mhz = 0;
static unsigned g_limit_mw = 300000;
static int g_initialised = 0;

int fake_nvml_locked_mhz() { return g_locked_mhz; }
unsigned fake_nvml_limit_mw() { return g_limit_mw; }

int nvmlInit_v2() {
  g_initialised = 1;
  return 0;
}
int nvmlShutdown() {
  g_initialised = 0;
  return 0;
}
const char* nvmlErrorString(int r) { return r == 4 ? "Insufficient Permissions" : "Unknown Error"; }
int nvmlDeviceGetCount_v2(unsigned* n) {
  *n = 1;
  return g_initialised ? 0 : 1;
}
int nvmlDeviceGetHandleByIndex_v2(unsigned i, void** dev) {
  if (i != 0) return 2;
  *dev = &g_locked_mhz;
  return 0;
}
int nvmlDeviceGetName(void*, char* name, unsigned len) {
  std::strncpy(name, "Fake GPU 80GB", len);
  return 0;
}
int nvmlDeviceGetPowerUsage(void*, unsigned* mw) {
  *mw = 123456;
  return 0;
}
int nvmlDeviceGetClockInfo(void*, int type, unsigned* mhz) {
  *mhz = type == 2 ? 2619 : (g_locked_mhz ? g_locked_mhz : 1980);
  return 0;
}
int nvmlDeviceGetTotalEnergyConsumption(void*, unsigned long long* mj) {
  *mj = 5000000ull;
  return 0;
}
int nvmlDeviceGetSupportedMemoryClocks(void*, unsigned* count, unsigned* mhz) {
  if (*count < 2) return 7;
  *count = 2;
  mhz[0] = 2619;
  mhz[1] = 1593;
  return 0;
}
int nvmlDeviceGetSupportedGraphicsClocks(void*, unsigned mem, unsigned* count, unsigned* mhz) {
  if (mem != 2619) return 2;  // only the top memory clock is asked for
  if (*count < 3) return 7;
  *count = 3;
  mhz[0] = 1980;
  mhz[1] = 1500;
  mhz[2] = 1005;
  return 0;
}
int nvmlDeviceSetGpuLockedClocks(void*, unsigned lo, unsigned hi) {
  const char* p = std::getenv("FAKE_NVML_PRIVILEGED");
  if (!p || std::strcmp(p, "1") != 0) return 4;
  if (lo != hi) return 2;
  g_locked_mhz = static_cast<int>(lo);
  return 0;
}
int nvmlDeviceResetGpuLockedClocks(void*) {
  g_locked_mhz = 0;
  return 0;
}
int nvmlDeviceGetPowerManagementLimit(void*, unsigned* mw) {
  *mw = g_limit_mw;
  return 0;
}
int nvmlDeviceGetPowerManagementLimitConstraints(void*, unsigned* lo, unsigned* hi) {
  *lo = 100000;
  *hi = 300000;
  return 0;
}
int nvmlDeviceSetPowerManagementLimit(void*, unsigned mw) {
  const char* p = std::getenv("FAKE_NVML_PRIVILEGED");
  if (!p || std::strcmp(p, "1") != 0) return 4;
  g_limit_mw = mw;
  return 0;
}
int nvmlDeviceGetTemperature(void*, int, unsigned* c) {
  *c = 41;
  return 0;
}
}
