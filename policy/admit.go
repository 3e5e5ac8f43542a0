package policy

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/gpusched/gpusched/model"
)

// Admit is the admission extension point: whether a tenant's job may enter
// the queue at all, and whether a waiting one may be placed now. A refusal
// at submission is for a reason that cannot change (the job asks for more
// than its tenant may ever have); a wait at placement says why, and the
// job stays queued until the reason goes (its tenant's other jobs end).
type Admit interface {
	Plugin
	// Submit refuses a job as it is submitted (a Refuse naming the field
	// at fault); nil lets it in.
	Submit(j *AdmitJob) *Status
	// Place says why a waiting job may not be placed now (a Wait); nil
	// places it. held is what its tenant holds now.
	Place(j *AdmitJob, held Usage) *Status
}

// DefaultAdmit is the admission of a scheduler that names none: tenant
// limits, which admit every job until limits are given (`--tenant-limits`).
const DefaultAdmit = "tenant-limits"

// The admission point. Its extensions are configured rather than only
// named: the one registered is TenantLimits with no limits; a scheduler
// given limits runs the TenantLimits they parse to.
var _ = DeclarePoint[Admit]("admission", DefaultAdmit, nil)

func init() { Register[Admit](TenantLimits(nil)) }

// AdmitJob is what admission looks at: the job's tenant, priority and
// size — GPUs (a training job's replicas), CPU in thousandths of a core
// and memory in bytes on its node.
type AdmitJob struct {
	Tenant   string
	Priority model.Priority
	GPUs     int
	CPUMilli int64
	Memory   int64
}

// Usage is what a tenant's running jobs hold: distinct GPUs (two jobs
// sharing one GPU hold one), CPU in thousandths of a core and memory in
// bytes.
type Usage struct {
	GPUs     int
	CPUMilli int64
	Memory   int64
}

// TenantLimit bounds one tenant: the GPUs, CPU (thousandths of a core) and
// memory (bytes) its running jobs may hold at once (0: no bound) and the
// highest priority it may submit (nil: any).
type TenantLimit struct {
	MaxGPUs     int
	MaxCPUMilli int64
	MaxMemory   int64
	MaxPriority *model.Priority
}

// AnyTenant is the key of TenantLimits that bounds every tenant the map
// does not name.
const AnyTenant = "*"

// TenantLimits is the default Admit: a limit per tenant (AnyTenant for the
// others); a tenant with no limit is admitted whatever it asks.
type TenantLimits map[string]TenantLimit

func (l TenantLimits) limit(tenant string) (TenantLimit, bool) {
	if lim, ok := l[tenant]; ok {
		return lim, true
	}
	lim, ok := l[AnyTenant]
	return lim, ok
}

// Name is the admission's name, DefaultAdmit.
func (TenantLimits) Name() string { return DefaultAdmit }

// Submit refuses a priority above the tenant's highest, and a job wider
// than all the GPUs its tenant may hold.
func (l TenantLimits) Submit(j *AdmitJob) *Status {
	lim, ok := l.limit(j.Tenant)
	refuse := func(field, format string, args ...any) *Status {
		return &Status{Code: Refuse, Plugin: DefaultAdmit, Field: field, Reason: fmt.Sprintf(format, args...)}
	}
	switch {
	case !ok:
		return nil
	case lim.MaxPriority != nil && j.Priority > *lim.MaxPriority:
		return refuse("priority", "tenant %s may submit priority %s at most, not %s", j.Tenant, *lim.MaxPriority, j.Priority)
	case lim.MaxGPUs > 0 && j.GPUs > lim.MaxGPUs:
		return refuse("gpus", "tenant %s may hold %d GPUs at most, so a job of %d can never run", j.Tenant, lim.MaxGPUs, j.GPUs)
	case lim.MaxCPUMilli > 0 && j.CPUMilli > lim.MaxCPUMilli:
		return refuse("cpu", "tenant %s may hold %s CPU cores at most, so a job of %s can never run", j.Tenant, Cores(lim.MaxCPUMilli), Cores(j.CPUMilli))
	case lim.MaxMemory > 0 && j.Memory > lim.MaxMemory:
		return refuse("memory", "tenant %s may hold %s of memory at most, so a job of %s can never run", j.Tenant, model.Bytes(lim.MaxMemory), model.Bytes(j.Memory))
	}
	return nil
}

// Place holds a job back while its tenant's running jobs hold so many
// GPUs that it would pass the tenant's bound.
//
// What the tenant holds counts distinct GPUs (two of its jobs sharing one
// hold one); the job asking is counted at its GPUs as new devices, though
// it may land on one the tenant holds and take fewer: admission comes
// before placement, so it errs on the side of the bound.
func (l TenantLimits) Place(j *AdmitJob, held Usage) *Status {
	lim, ok := l.limit(j.Tenant)
	wait := func(format string, args ...any) *Status {
		return &Status{Code: Wait, Plugin: DefaultAdmit, Reason: fmt.Sprintf(format, args...)}
	}
	switch {
	case !ok:
		return nil
	case lim.MaxGPUs > 0 && held.GPUs+j.GPUs > lim.MaxGPUs:
		return wait("tenant %s holds %d of the %d GPUs it may hold; this job needs %d more", j.Tenant, held.GPUs, lim.MaxGPUs, j.GPUs)
	case lim.MaxCPUMilli > 0 && held.CPUMilli+j.CPUMilli > lim.MaxCPUMilli:
		return wait("tenant %s holds %s of the %s CPU cores it may hold; this job needs %s more", j.Tenant, Cores(held.CPUMilli), Cores(lim.MaxCPUMilli), Cores(j.CPUMilli))
	case lim.MaxMemory > 0 && held.Memory+j.Memory > lim.MaxMemory:
		return wait("tenant %s holds %s of the %s of memory it may hold; this job needs %s more", j.Tenant, model.Bytes(held.Memory), model.Bytes(lim.MaxMemory), model.Bytes(j.Memory))
	}
	return nil
}

// ParseTenantLimits reads limits written as on the command line:
// "team-a=gpus:8,cpu:64,memory:256GB,priority:medium;*=gpus:4" — per
// tenant (or * for every other), gpus, cpu (cores) and memory (the most
// its running jobs may hold at once) and priority (the highest it may
// submit: a level or an integer). An empty text is no limits.
func ParseTenantLimits(text string) (TenantLimits, error) {
	out := TenantLimits{}
	if strings.TrimSpace(text) == "" {
		return out, nil
	}
	for _, part := range strings.Split(text, ";") {
		tenant, spec, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok || tenant == "" || spec == "" {
			return nil, fmt.Errorf("%q: want TENANT=gpus:N,priority:P (or *= for every other tenant)", part)
		}
		if _, dup := out[tenant]; dup {
			return nil, fmt.Errorf("tenant %s is given twice", tenant)
		}
		var lim TenantLimit
		for _, kv := range strings.Split(spec, ",") {
			k, v, ok := strings.Cut(strings.TrimSpace(kv), ":")
			switch {
			case !ok:
				return nil, fmt.Errorf("tenant %s: %q: want gpus:N, cpu:CORES, memory:SIZE or priority:P", tenant, kv)
			case k == "gpus":
				n, err := strconv.Atoi(v)
				if err != nil || n < 1 {
					return nil, fmt.Errorf("tenant %s: gpus:%s: want a whole number of GPUs, at least 1", tenant, v)
				}
				lim.MaxGPUs = n
			case k == "cpu":
				c, err := strconv.ParseFloat(v, 64)
				if err != nil || !(c > 0) || c > 1e9 {
					return nil, fmt.Errorf("tenant %s: cpu:%s: want a number of CPU cores above 0", tenant, v)
				}
				lim.MaxCPUMilli = model.CoresToMilli(c)
			case k == "memory":
				b, err := model.ParseBytes(v)
				if err != nil || b <= 0 {
					return nil, fmt.Errorf("tenant %s: memory:%s: want a size, e.g. 256GB", tenant, v)
				}
				lim.MaxMemory = int64(b)
			case k == "priority":
				p, err := model.ParsePriority(v)
				if err != nil {
					return nil, fmt.Errorf("tenant %s: priority:%s: %v", tenant, v, err)
				}
				lim.MaxPriority = &p
			default:
				return nil, fmt.Errorf("tenant %s: unknown limit %q (known: gpus, cpu, memory, priority)", tenant, k)
			}
		}
		out[tenant] = lim
	}
	return out, nil
}

// String writes the limits back in ParseTenantLimits's form, tenants in
// name order.
func (l TenantLimits) String() string {
	tenants := make([]string, 0, len(l))
	for t := range l {
		tenants = append(tenants, t)
	}
	slices.Sort(tenants)
	var parts []string
	for _, t := range tenants {
		var kv []string
		if l[t].MaxGPUs > 0 {
			kv = append(kv, "gpus:"+strconv.Itoa(l[t].MaxGPUs))
		}
		if l[t].MaxCPUMilli > 0 {
			kv = append(kv, "cpu:"+Cores(l[t].MaxCPUMilli))
		}
		if l[t].MaxMemory > 0 {
			kv = append(kv, "memory:"+model.Bytes(l[t].MaxMemory).Exact())
		}
		if p := l[t].MaxPriority; p != nil {
			kv = append(kv, "priority:"+p.String())
		}
		parts = append(parts, t+"="+strings.Join(kv, ","))
	}
	return strings.Join(parts, ";")
}
