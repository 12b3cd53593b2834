/*
 * A Kafka cluster for the tests: librdkafka's mock cluster (a real Kafka
 * wire-protocol broker set on loopback TCP ports), from Debian's
 * librdkafka-dev.
 *
 *   mock_cluster BROKERS [TOPIC:PARTITIONS ...] [@GROUP ...]
 *
 * Starts BROKERS brokers (ids 1..BROKERS), creates the topics (replicated on
 * every broker), prints "bootstrap <host:port,...>" and then answers one
 * line per command read on standard input ("ok" or "error <why>"):
 *
 *   down ID            the broker stops and refuses connections; as a real
 *                      cluster's controller would, the partitions it led and
 *                      the groups it coordinated move to the other brokers
 *   up ID              the broker takes connections again
 *   topic NAME COUNT   creates a topic
 *   group NAME         a consumer group whose coordinator `down` moves
 *   leader NAME P ID   broker ID leads partition P of topic NAME from now on
 *                      (clients learn it when the old leader refuses them)
 *   error API CODE     the next request of Kafka API key API (12 = Heartbeat)
 *                      to any broker is answered with error code CODE
 *
 * It exits when standard input closes, so it never outlives its test.
 * Build: cc -O2 -o mock_cluster mock_cluster.c $(pkg-config --cflags --libs rdkafka)
 */
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_NAMES 256

struct topic {
  char name[256];
  int partitions;
};

static struct topic topics[MAX_NAMES];
static int topic_count = 0;
static char groups[MAX_NAMES][256];
static int group_count = 0;
static int brokers = 3;
static int is_down[64];

static int add_topic(rd_kafka_mock_cluster_t *mcluster, const char *name, int partitions) {
  if (topic_count == MAX_NAMES || strlen(name) >= sizeof topics[0].name || partitions < 1) return -1;
  if (rd_kafka_mock_topic_create(mcluster, name, partitions, brokers) != RD_KAFKA_RESP_ERR_NO_ERROR) return -1;
  strcpy(topics[topic_count].name, name);
  topics[topic_count].partitions = partitions;
  topic_count++;
  return 0;
}

static int add_group(const char *name) {
  if (group_count == MAX_NAMES || strlen(name) >= sizeof groups[0]) return -1;
  strcpy(groups[group_count++], name);
  return 0;
}

/* The next live broker after `from`, round robin; 0 when none is up. */
static int live_after(int from) {
  for (int step = 1; step <= brokers; step++) {
    int id = (from + step - 1) % brokers + 1;
    if (!is_down[id]) return id;
  }
  return 0;
}

/*
 * Moves every partition leader and group coordinator to live brokers, spread
 * round robin. Only when a broker goes down: in librdkafka 2.0 some of these
 * calls wait a second for the mock's thread, so they are not made otherwise
 * (the mock spreads leaders itself when it creates a topic).
 */
static void elect(rd_kafka_mock_cluster_t *mcluster) {
  int next = 0;
  for (int t = 0; t < topic_count; t++) {
    for (int p = 0; p < topics[t].partitions; p++) {
      next = live_after(next);
      if (next != 0) rd_kafka_mock_partition_set_leader(mcluster, topics[t].name, p, next);
    }
  }
  for (int g = 0; g < group_count; g++) {
    next = live_after(next);
    if (next != 0) rd_kafka_mock_coordinator_set(mcluster, "group", groups[g], next);
  }
}

int main(int argc, char **argv) {
  char errstr[512];
  if (argc < 2 || (brokers = atoi(argv[1])) < 1 || brokers > 63) {
    fprintf(stderr, "usage: %s BROKERS [TOPIC:PARTITIONS ...] [@GROUP ...]\n", argv[0]);
    return 2;
  }
  rd_kafka_conf_t *conf = rd_kafka_conf_new();
  rd_kafka_conf_set(conf, "log_level", "3", errstr, sizeof errstr);
  rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof errstr);
  if (rk == NULL) {
    fprintf(stderr, "cannot create the client handle: %s\n", errstr);
    return 1;
  }
  rd_kafka_mock_cluster_t *mcluster = rd_kafka_mock_cluster_new(rk, brokers);
  if (mcluster == NULL) {
    fprintf(stderr, "cannot start the mock cluster\n");
    return 1;
  }
  for (int i = 2; i < argc; i++) {
    if (argv[i][0] == '@') {
      if (add_group(argv[i] + 1) != 0) {
        fprintf(stderr, "cannot register group %s\n", argv[i] + 1);
        return 1;
      }
      continue;
    }
    char *colon = strrchr(argv[i], ':');
    if (colon == NULL) {
      fprintf(stderr, "expected TOPIC:PARTITIONS, got %s\n", argv[i]);
      return 2;
    }
    *colon = '\0';
    if (add_topic(mcluster, argv[i], atoi(colon + 1)) != 0) {
      fprintf(stderr, "cannot create topic %s\n", argv[i]);
      return 1;
    }
  }
  printf("bootstrap %s\n", rd_kafka_mock_cluster_bootstraps(mcluster));
  fflush(stdout);

  char line[1024];
  while (fgets(line, sizeof line, stdin) != NULL) {
    char command[32], name[512];
    int id = 0, count = 0;
    int ok = 0;
    if (sscanf(line, "down %d", &id) == 1 && id >= 1 && id <= brokers) {
      ok = rd_kafka_mock_broker_set_down(mcluster, id) == RD_KAFKA_RESP_ERR_NO_ERROR;
      if (ok) {
        is_down[id] = 1;
        elect(mcluster);
      }
    } else if (sscanf(line, "up %d", &id) == 1 && id >= 1 && id <= brokers) {
      ok = rd_kafka_mock_broker_set_up(mcluster, id) == RD_KAFKA_RESP_ERR_NO_ERROR;
      if (ok) is_down[id] = 0;
    } else if (sscanf(line, "topic %511s %d", name, &count) == 2) {
      ok = add_topic(mcluster, name, count) == 0;
    } else if (sscanf(line, "leader %511s %d %d", name, &count, &id) == 3 && id >= 1 && id <= brokers) {
      ok = rd_kafka_mock_partition_set_leader(mcluster, name, count, id) == RD_KAFKA_RESP_ERR_NO_ERROR;
    } else if (sscanf(line, "error %d %d", &id, &count) == 2) {
      rd_kafka_mock_push_request_errors(mcluster, (int16_t)id, 1, (rd_kafka_resp_err_t)count);
      ok = 1;
    } else if (sscanf(line, "group %511s", name) == 1) {
      ok = add_group(name) == 0;
    } else if (sscanf(line, "%31s", command) != 1) {
      continue;
    }
    line[strcspn(line, "\n")] = '\0';
    if (ok) printf("ok\n");
    else printf("error cannot do: %s\n", line);
    fflush(stdout);
  }
  rd_kafka_mock_cluster_destroy(mcluster);
  rd_kafka_destroy(rk);
  return 0;
}
