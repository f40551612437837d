package main

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	_ "net/http/pprof" // /debug/pprof on the child's own port, for -heapprofile
	"runtime"
	"runtime/debug"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/smithy-go/metrics"

	"github.com/sagemaker-bidi/sagemaker-bidi/bidi"
	"github.com/sagemaker-bidi/sagemaker-bidi/bidi/relay"
)

// runRelay is the child: a relay in front of the model at -model, with
// the example's policy for live audio (drop the oldest frames), no pings
// (the crowd never reads, so it would not answer them) and a /stats
// endpoint.
func runRelay() error {
	if *cpus != "" {
		if err := pinProcess(*cpus); err != nil {
			return err
		}
	}
	if *memRate > 0 {
		runtime.MemProfileRate = *memRate
	}
	if *memLimit > 0 {
		// The application's choice, as -sndbuf is: the garbage collector
		// works harder as the process nears the limit, instead of letting
		// the heap grow to twice what is live (GOGC).
		debug.SetMemoryLimit(*memLimit)
	}
	tlsCfg, err := loadCert(*certFile)
	if err != nil {
		return err
	}
	client := bidi.NewFromConfig(aws.Config{
		Region:       modelRegion,
		Credentials:  credentials.StaticCredentialsProvider{Value: modelCredentials},
		BaseEndpoint: aws.String(*modelURL),
	}, func(o *bidi.Options) {
		o.TLSConfig = tlsCfg
		o.RetryMaxAttempts = 1
		if *pooled {
			o.MessageBuffer = relay.MessageBuffer
		}
	})
	drops := &dropCounter{}
	var rotations atomic.Int64
	// The echo answers within -model-delay: a short quiet period ends an
	// old stream soon after its last reply (its successor's replies
	// follow it), and a call soon after its client's end of input.
	quiet := 200*time.Millisecond + *delay
	open := relay.Sessions(client)
	if *rotAfter > 0 {
		open = relay.Rotating(client, &bidi.Rotation{
			After:       *rotAfter,
			FinishQuiet: quiet,
			OnRotate:    func(bidi.RotationEvent) { rotations.Add(1) },
		})
	}
	h, err := relay.New(client, func(r *http.Request) (*bidi.OpenInput, error) {
		ep := r.URL.Query().Get("ep")
		if ep == "" {
			ep = "load"
		}
		return &bidi.OpenInput{EndpointName: ep}, nil
	}, &relay.Options{
		Open:               open,
		EndOfInput:         func(m bidi.Message) bool { return m.Type == bidi.DataTypeUTF8 && string(m.Data) == `{"type":"end"}` },
		Overflow:           relay.OverflowDropOldest,
		ToModelQueueBytes:  *queue,
		ToClientQueueBytes: *queue,
		PingInterval:       -1,
		FinishQuiet:        quiet,
		MaxClients:         10000,
		MeterProvider:      drops,
	})
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.Handle("/ws", h)
	mux.Handle("/debug/pprof/", http.DefaultServeMux)
	mux.HandleFunc("/direct", func(w http.ResponseWriter, r *http.Request) {
		n, err1 := strconv.Atoi(r.URL.Query().Get("n"))
		frames, err2 := strconv.Atoi(r.URL.Query().Get("frames"))
		if err := cmp.Or(err1, err2); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		d, err := roundTrips(r.Context(), n, frames, func(ctx context.Context) (echoer, error) { return openDirect(ctx, client) })
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		json.NewEncoder(w).Encode(d)
	})
	mux.HandleFunc("/stats", func(w http.ResponseWriter, r *http.Request) {
		// With ?gc=1, after two collections: objects in sync.Pools
		// survive the first (as the pools' victims), and are not what
		// the calls hold.
		if r.URL.Query().Get("gc") != "" {
			runtime.GC()
			runtime.GC()
		}
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		json.NewEncoder(w).Encode(stats{
			HeapInuse: ms.HeapInuse, HeapAlloc: ms.HeapAlloc, StackIn: ms.StackInuse, Sys: ms.Sys,
			HeapIdle: ms.HeapIdle, HeapReleased: ms.HeapReleased, StackSys: ms.StackSys,
			MetaSys: ms.MSpanSys + ms.MCacheSys + ms.GCSys + ms.BuckHashSys, OtherSys: ms.OtherSys,
			TotalAlloc: ms.TotalAlloc, NumGC: ms.NumGC,
			Goroutine: runtime.NumGoroutine(), Active: h.Active(), Rotations: rotations.Load(),
			Drops: drops.toClient.Load(), DropsToModel: drops.toModel.Load(),
		})
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	fmt.Printf("listening %s\n", ln.Addr())
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	return hs.Serve(sndbufListener{ln.(*net.TCPListener), *sndbuf})
}

// sndbufListener sets each accepted connection's send buffer to n bytes
// (0: the system's, which on loopback grows to MiBs per connection): the
// application's choice of how much of a slow client's backlog the kernel
// holds before the relay's queue and overflow policy take over.
type sndbufListener struct {
	*net.TCPListener
	n int
}

func (l sndbufListener) Accept() (net.Conn, error) {
	c, err := l.AcceptTCP()
	if err != nil {
		return nil, err
	}
	if l.n > 0 {
		if err := c.SetWriteBuffer(l.n); err != nil {
			c.Close()
			return nil, err
		}
	}
	return c, nil
}

// dropCounter is a MeterProvider that keeps only the relay's drop counts
// by direction, read by /stats.
type dropCounter struct {
	metrics.NopMeter
	toClient, toModel atomic.Int64
}

func (d *dropCounter) Meter(string, ...metrics.MeterOption) metrics.Meter { return d }

func (d *dropCounter) Int64Counter(name string, _ ...metrics.InstrumentOption) (metrics.Int64Counter, error) {
	if name == relay.MetricDrops {
		return counterFunc(func(n int64, dir string) {
			if dir == relay.DirectionToModel {
				d.toModel.Add(n)
			} else {
				d.toClient.Add(n)
			}
		}), nil
	}
	return d.NopMeter.Int64Counter(name)
}

// counterFunc receives each Add with its direction attribute.
type counterFunc func(n int64, direction string)

// recordOptions reuses the options an Add reads its attributes from: a
// fresh one allocates a map for its Properties on every call, a
// measuring instrument's garbage (hundreds of bytes per drop) that would
// count as the relay's memory.
var recordOptions = sync.Pool{New: func() any { return new(metrics.RecordMetricOptions) }}

func (f counterFunc) Add(_ context.Context, n int64, opts ...metrics.RecordMetricOption) {
	o := recordOptions.Get().(*metrics.RecordMetricOptions)
	for _, opt := range opts {
		opt(o)
	}
	dir, _ := o.Properties.Get(relay.AttrDirection).(string)
	recordOptions.Put(o)
	f(n, dir)
}
